//! The token check, one for every front end: an HTTP bearer token (`--auth-token`) and
//! a Kafka SASL/PLAIN password are the same secret, compared the same way.

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

#[cfg(test)]
mod tests {
    use super::token_matches;

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
