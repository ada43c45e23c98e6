//! [`VersionSpec`]: a version as a path names it — a number, `latest` or `-1`.

use crate::error::RegistryError;

/// A version named in a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSpec {
    /// The newest version (live, unless soft-deleted ones are asked for).
    Latest,
    /// That version.
    Number(u32),
}

impl VersionSpec {
    /// Parses `latest`, `-1` or a number in `1..=2^31-1`.
    ///
    /// # Errors
    /// [`RegistryError::InvalidVersion`] for anything else.
    pub fn parse(s: &str) -> Result<Self, RegistryError> {
        if s == "latest" || s == "-1" {
            return Ok(VersionSpec::Latest);
        }
        match s.parse::<u32>() {
            Ok(n) if (1..=i32::MAX as u32).contains(&n) => Ok(VersionSpec::Number(n)),
            _ => Err(RegistryError::InvalidVersion(s.chars().take(64).collect())),
        }
    }
}

impl std::fmt::Display for VersionSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VersionSpec::Latest => f.write_str("latest"),
            VersionSpec::Number(n) => write!(f, "{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::VersionSpec;

    #[test]
    fn versions() {
        assert_eq!(VersionSpec::parse("latest").unwrap(), VersionSpec::Latest);
        assert_eq!(VersionSpec::parse("-1").unwrap(), VersionSpec::Latest);
        assert_eq!(VersionSpec::parse("7").unwrap(), VersionSpec::Number(7));
        for bad in ["0", "-2", "2147483648", "x", ""] {
            assert!(VersionSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
