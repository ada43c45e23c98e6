//! The token check, one for every front end: an HTTP bearer token (`--auth-token`), the
//! password of HTTP basic auth (what schema-registry serializers send) and a Kafka
//! SASL/PLAIN password are the same secret, compared the same way.

use base64::Engine as _;

/// Whether `presented` is the server's `token`. The comparison reads every byte of an
/// equally long candidate whatever it holds, so its time does not tell how much of a
/// guess was right.
pub fn token_matches(token: &str, presented: &[u8]) -> bool {
    let token = token.as_bytes();
    token.len() == presented.len()
        && token
            .iter()
            .zip(presented)
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Whether an HTTP `Authorization` header value carries the server's `token`: as
/// `Bearer <token>`, or as `Basic` credentials whose password is the token (any user
/// name).
pub fn authorization_matches(token: &str, header: &[u8]) -> bool {
    if let Some(given) = header.strip_prefix(b"Bearer ") {
        return token_matches(token, given);
    }
    let Some(encoded) = header.strip_prefix(b"Basic ") else {
        return false;
    };
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim_ascii()) else {
        return false;
    };
    match decoded.iter().position(|b| *b == b':') {
        Some(colon) => token_matches(token, &decoded[colon + 1..]),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{authorization_matches, token_matches};

    #[test]
    fn bearer_or_basic_with_the_token_as_password() {
        assert!(authorization_matches("s3cret", b"Bearer s3cret"));
        // "user:s3cret" and ":s3cret"
        assert!(authorization_matches("s3cret", b"Basic dXNlcjpzM2NyZXQ="));
        assert!(authorization_matches("s3cret", b"Basic OnMzY3JldA=="));
        for wrong in [
            &b"Bearer s3cre"[..],
            b"s3cret",
            b"Basic dXNlcjp3cm9uZw==",
            b"Basic czNjcmV0",
            b"Basic !!!",
            b"",
        ] {
            assert!(!authorization_matches("s3cret", wrong), "{wrong:?}");
        }
    }

    #[test]
    fn only_the_whole_token_matches() {
        assert!(token_matches("s3cret", b"s3cret"));
        for wrong in [
            &b""[..],
            b"s3cre",
            b"s3cret!",
            b"S3cret",
            b"s3creT",
            b"\0\0\0\0\0\0",
        ] {
            assert!(!token_matches("s3cret", wrong), "{wrong:?}");
        }
    }
}
