//! [`Limits`]: the bounds every registry call runs under, so that no request can make
//! the registry hold or compute without bound.

/// Bounds of the registry; a call past one fails with
/// [`RegistryError::LimitExceeded`](crate::RegistryError::LimitExceeded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest schema text, bytes.
    pub max_schema_bytes: usize,
    /// Most subjects (live or soft-deleted) at once.
    pub max_subjects: usize,
    /// Most versions (live or soft-deleted) under one subject.
    pub max_versions_per_subject: usize,
    /// Most references of one schema, counted over its whole reference tree.
    pub max_references: usize,
    /// Deepest chain of references (a schema referring to one that refers to …).
    pub max_reference_depth: usize,
    /// Most schema bytes one compatibility check may compare: the sizes of the new
    /// schema and of each earlier version it is checked against, summed over versions.
    pub max_compatibility_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_schema_bytes: 1024 * 1024,
            max_subjects: 10_000,
            max_versions_per_subject: 1_000,
            max_references: 100,
            max_reference_depth: 10,
            max_compatibility_bytes: 64 * 1024 * 1024,
        }
    }
}
