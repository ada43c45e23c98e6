//! [`CompatibilityLevel`] and [`Mode`]: the two settings a subject (or the registry
//! globally) carries, with their names on the wire.

use crate::error::RegistryError;

/// Which earlier versions a new schema is checked against, and in which direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompatibilityLevel {
    /// No check.
    None,
    /// The new schema reads data written with the latest version.
    Backward,
    /// The latest version reads data written with the new schema.
    Forward,
    /// Both of the above.
    Full,
    /// `Backward` against every live version.
    BackwardTransitive,
    /// `Forward` against every live version.
    ForwardTransitive,
    /// `Full` against every live version.
    FullTransitive,
}

impl CompatibilityLevel {
    /// The wire name (`BACKWARD`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            CompatibilityLevel::None => "NONE",
            CompatibilityLevel::Backward => "BACKWARD",
            CompatibilityLevel::Forward => "FORWARD",
            CompatibilityLevel::Full => "FULL",
            CompatibilityLevel::BackwardTransitive => "BACKWARD_TRANSITIVE",
            CompatibilityLevel::ForwardTransitive => "FORWARD_TRANSITIVE",
            CompatibilityLevel::FullTransitive => "FULL_TRANSITIVE",
        }
    }

    /// Parses a wire name, in any case.
    ///
    /// # Errors
    /// [`RegistryError::InvalidCompatibilityLevel`] for any other name.
    pub fn parse(name: &str) -> Result<Self, RegistryError> {
        Ok(match name.to_ascii_uppercase().as_str() {
            "NONE" => CompatibilityLevel::None,
            "BACKWARD" => CompatibilityLevel::Backward,
            "FORWARD" => CompatibilityLevel::Forward,
            "FULL" => CompatibilityLevel::Full,
            "BACKWARD_TRANSITIVE" => CompatibilityLevel::BackwardTransitive,
            "FORWARD_TRANSITIVE" => CompatibilityLevel::ForwardTransitive,
            "FULL_TRANSITIVE" => CompatibilityLevel::FullTransitive,
            _ => return Err(RegistryError::InvalidCompatibilityLevel),
        })
    }

    /// Whether every live version is checked, not only the latest.
    pub fn transitive(self) -> bool {
        matches!(
            self,
            CompatibilityLevel::BackwardTransitive
                | CompatibilityLevel::ForwardTransitive
                | CompatibilityLevel::FullTransitive
        )
    }

    /// Whether the new schema must read the old one's data.
    pub fn backward(self) -> bool {
        matches!(
            self,
            CompatibilityLevel::Backward
                | CompatibilityLevel::BackwardTransitive
                | CompatibilityLevel::Full
                | CompatibilityLevel::FullTransitive
        )
    }

    /// Whether the old schema must read the new one's data.
    pub fn forward(self) -> bool {
        matches!(
            self,
            CompatibilityLevel::Forward
                | CompatibilityLevel::ForwardTransitive
                | CompatibilityLevel::Full
                | CompatibilityLevel::FullTransitive
        )
    }
}

/// Whether a subject (or the registry) takes writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Registrations and deletes are served.
    ReadWrite,
    /// Registrations and deletes are refused.
    ReadOnly,
    /// As `ReadOnly`, and a subject's own mode cannot lift it.
    ReadOnlyOverride,
    /// Registrations carry their own id and version (a migration from another registry).
    Import,
}

impl Mode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ReadWrite => "READWRITE",
            Mode::ReadOnly => "READONLY",
            Mode::ReadOnlyOverride => "READONLY_OVERRIDE",
            Mode::Import => "IMPORT",
        }
    }

    /// Parses a wire name, in any case.
    ///
    /// # Errors
    /// [`RegistryError::InvalidMode`] for any other name.
    pub fn parse(name: &str) -> Result<Self, RegistryError> {
        Ok(match name.to_ascii_uppercase().as_str() {
            "READWRITE" => Mode::ReadWrite,
            "READONLY" => Mode::ReadOnly,
            "READONLY_OVERRIDE" => Mode::ReadOnlyOverride,
            "IMPORT" => Mode::Import,
            _ => return Err(RegistryError::InvalidMode),
        })
    }

    /// Whether registrations and deletes are refused.
    pub fn read_only(self) -> bool {
        matches!(self, Mode::ReadOnly | Mode::ReadOnlyOverride)
    }
}

#[cfg(test)]
mod tests {
    use super::{CompatibilityLevel, Mode};

    #[test]
    fn names_round_trip_in_any_case() {
        for name in [
            "NONE",
            "BACKWARD",
            "FORWARD",
            "FULL",
            "BACKWARD_TRANSITIVE",
            "FORWARD_TRANSITIVE",
            "FULL_TRANSITIVE",
        ] {
            let level = CompatibilityLevel::parse(&name.to_lowercase()).unwrap();
            assert_eq!(level.as_str(), name);
        }
        assert!(CompatibilityLevel::parse("SIDEWAYS").is_err());
        assert_eq!(Mode::parse("readonly").unwrap(), Mode::ReadOnly);
        assert!(Mode::parse("WRITEONLY").is_err());
        assert!(CompatibilityLevel::FullTransitive.backward());
        assert!(CompatibilityLevel::FullTransitive.forward());
        assert!(!CompatibilityLevel::Backward.forward());
    }
}
