//! Name validation for topics and groups (Kafka's rule), applied before any name
//! becomes part of a path, and the file names of segments and indexes.

use crate::error::{KafkoError, Result};

/// Longest accepted topic or group name (Kafka's limit).
pub const MAX_NAME_LEN: usize = 249;

/// Validates a topic or group name: `[a-zA-Z0-9._-]{1,249}`, not `.` or `..`.
///
/// # Errors
/// [`KafkoError::InvalidName`] saying which rule the name breaks.
pub fn validate_name(name: &str) -> Result<()> {
    let reject = |reason| {
        let shown: String = name.chars().take(64).collect();
        Err(KafkoError::InvalidName {
            name: shown,
            reason,
        })
    };
    if name.is_empty() {
        return reject("must not be empty");
    }
    if name.len() > MAX_NAME_LEN {
        return reject("must be at most 249 characters");
    }
    if name == "." || name == ".." {
        return reject("must not be '.' or '..'");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return reject("may contain only ASCII letters, digits, '.', '_' and '-'");
    }
    Ok(())
}

/// Marks a stored group name that encodes a Kafka group id outside the name rule.
const ENCODED_GROUP: char = '~';

/// Validates a group name: a name as [`validate_name`] takes it, or the stored form of
/// any other Kafka group id ([`group_name_for_id`]).
///
/// # Errors
/// [`KafkoError::InvalidName`].
pub fn validate_group_name(name: &str) -> Result<()> {
    match name.strip_prefix(ENCODED_GROUP) {
        Some(hex)
            if !hex.is_empty()
                && hex.len() % 2 == 0
                && name.len() <= MAX_NAME_LEN
                && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            Ok(())
        }
        _ => validate_name(name),
    }
}

/// The group name that stores Kafka group id `id`: the id itself when it follows the
/// name rule, else `~` and the id's bytes in hex (Kafka allows any id; file names
/// cannot hold any). `None` when the id is empty or its stored form would be too long.
pub fn group_name_for_id(id: &str) -> Option<String> {
    if validate_name(id).is_ok() {
        return Some(id.to_owned());
    }
    if id.is_empty() || 1 + 2 * id.len() > MAX_NAME_LEN {
        return None;
    }
    let mut name = String::with_capacity(1 + 2 * id.len());
    name.push(ENCODED_GROUP);
    for b in id.bytes() {
        name.push_str(&format!("{b:02x}"));
    }
    Some(name)
}

/// The Kafka group id a group name stores (the inverse of [`group_name_for_id`]).
pub fn group_id_for_name(name: &str) -> String {
    let decoded = name.strip_prefix(ENCODED_GROUP).and_then(|hex| {
        let bytes: Option<Vec<u8>> = (0..hex.len())
            .step_by(2)
            .map(|i| {
                hex.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            })
            .collect();
        String::from_utf8(bytes?).ok()
    });
    decoded.unwrap_or_else(|| name.to_owned())
}

/// File name of a segment's log: the base offset padded to 20 digits.
pub(crate) fn segment_file(base_offset: u64, extension: &str) -> String {
    format!("{base_offset:020}.{extension}")
}

/// Parses `<20 digits>.log` back to its base offset.
pub(crate) fn parse_segment_file(file_name: &str) -> Option<u64> {
    parse_offset_file(file_name, "log")
}

/// Parses `<20 digits>.<extension>` (a file named by an offset) back to its offset.
pub(crate) fn parse_offset_file(file_name: &str, extension: &str) -> Option<u64> {
    let stem = file_name.strip_suffix(extension)?.strip_suffix('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_kafka_group_id_has_a_stored_name_that_maps_back() {
        for id in ["orders", "my group", "a:b/c", "..", "ünïcode", "~x"] {
            let name = group_name_for_id(id).unwrap();
            validate_group_name(&name).unwrap();
            assert_eq!(group_id_for_name(&name), id);
        }
        assert_eq!(
            group_name_for_id("plain-name_1.x").unwrap(),
            "plain-name_1.x"
        );
        assert_eq!(group_name_for_id("a b").unwrap(), "~612062");
        assert!(group_name_for_id("").is_none());
        assert!(group_name_for_id(&"x ".repeat(100)).is_none());
        assert!(validate_group_name("~").is_err());
        assert!(validate_group_name("~6").is_err());
        assert!(validate_group_name("~6G").is_err());
        assert!(validate_group_name("~../x").is_err());
    }

    #[test]
    fn hostile_names_are_rejected() {
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "..%2f",
            "a\0b",
            "ünï",
            "a b",
            &"x".repeat(250),
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["orders", "a.b-c_d", "A1", &"x".repeat(249), "..."] {
            validate_name(good).unwrap();
        }
    }

    #[test]
    fn segment_names_round_trip_and_sort_by_offset() {
        assert_eq!(segment_file(42, "log"), "00000000000000000042.log");
        assert_eq!(parse_segment_file("00000000000000000042.log"), Some(42));
        assert_eq!(parse_segment_file("42.log"), None);
        assert_eq!(parse_segment_file("00000000000000000042.index"), None);
        assert!(segment_file(9, "log") < segment_file(10, "log"));
    }
}
