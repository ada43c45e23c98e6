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

/// File name of a segment's log: the base offset padded to 20 digits.
pub(crate) fn segment_file(base_offset: u64, extension: &str) -> String {
    format!("{base_offset:020}.{extension}")
}

/// Parses `<20 digits>.log` back to its base offset.
pub(crate) fn parse_segment_file(file_name: &str) -> Option<u64> {
    let stem = file_name.strip_suffix(".log")?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
