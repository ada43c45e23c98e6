//! [`RegistryError`]: every way a registry call fails, with the HTTP status and the
//! Confluent `error_code` it is answered with.

use axum::http::StatusCode;

/// A refused or failed registry call. Each variant maps to one Confluent error code
/// ([`RegistryError::error_code`]) and HTTP status ([`RegistryError::status`]).
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No live (or, when asked, soft-deleted) version under this subject.
    #[error("Subject '{0}' not found.")]
    SubjectNotFound(String),
    /// The subject has no such version.
    #[error("Version {version} not found.")]
    VersionNotFound {
        /// The version asked for, as given.
        version: String,
    },
    /// No schema with this id, or the schema is not registered under the subject.
    #[error("{0}")]
    SchemaNotFound(String),
    /// A soft delete of a subject that is already soft-deleted.
    #[error("Subject '{0}' was soft deleted. Set permanent=true to delete permanently")]
    SubjectSoftDeleted(String),
    /// A permanent delete of a subject that was not soft-deleted first.
    #[error("Subject '{0}' was not deleted first before being permanently deleted")]
    SubjectNotSoftDeleted(String),
    /// A soft delete of a version that is already soft-deleted.
    #[error(
        "Subject '{subject}' Version {version} was soft deleted. Set permanent=true to delete permanently"
    )]
    VersionSoftDeleted {
        /// The subject.
        subject: String,
        /// The version.
        version: u32,
    },
    /// A permanent delete of a version that was not soft-deleted first.
    #[error(
        "Subject '{subject}' Version {version} was not deleted first before being permanently deleted"
    )]
    VersionNotSoftDeleted {
        /// The subject.
        subject: String,
        /// The version.
        version: u32,
    },
    /// The subject has no compatibility level of its own.
    #[error("Subject '{0}' does not have subject-level compatibility configured")]
    SubjectConfigNotFound(String),
    /// The subject has no mode of its own.
    #[error("Subject '{0}' does not have subject-level mode configured")]
    SubjectModeNotFound(String),
    /// The schema is incompatible with the versions its subject's level checks it against.
    #[error("Schema being registered is incompatible with an earlier schema for subject \"{subject}\", details: [{}]", .messages.join(", "))]
    Incompatible {
        /// The subject.
        subject: String,
        /// What is incompatible, one line each.
        messages: Vec<String>,
    },
    /// The schema does not parse or is not valid for its type.
    #[error("Invalid schema: {0}")]
    InvalidSchema(String),
    /// A version that is neither a positive 32-bit number, `-1` nor `latest`.
    #[error(
        "The specified version '{0}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""
    )]
    InvalidVersion(String),
    /// An unknown compatibility level.
    #[error(
        "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"
    )]
    InvalidCompatibilityLevel,
    /// An unknown mode.
    #[error("Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, IMPORT")]
    InvalidMode,
    /// The call is refused in the subject's mode, or a limit of the registry is reached.
    #[error("{0}")]
    OperationNotPermitted(String),
    /// The version is referenced by another schema and cannot be deleted.
    #[error("One or more references exist to the schema {{subject={subject},version={version}}}")]
    ReferenceExists {
        /// The subject.
        subject: String,
        /// The version.
        version: u32,
    },
    /// A record that is not in Confluent's wire format, or does not decode with the
    /// schema its id names.
    #[error("{0}")]
    NotDecodable(String),
    /// A request body or parameter that is not what the API takes.
    #[error("{0}")]
    BadRequest(String),
    /// A schema, reference list or request past a configured bound.
    #[error("{0}")]
    LimitExceeded(String),
    /// Writing to or reading from the `_schemas` topic or the registry's state file
    /// failed (a full disk, an I/O error, a `_schemas` topic of more than one
    /// partition), or the registry failed inside.
    #[error("Error in the backend data store: {0}")]
    Store(String),
}

impl RegistryError {
    /// Confluent's `error_code` for this error.
    pub fn error_code(&self) -> u32 {
        match self {
            RegistryError::SubjectNotFound(_) => 40401,
            RegistryError::VersionNotFound { .. } => 40402,
            RegistryError::SchemaNotFound(_) => 40403,
            RegistryError::SubjectSoftDeleted(_) => 40404,
            RegistryError::SubjectNotSoftDeleted(_) => 40405,
            RegistryError::VersionSoftDeleted { .. } => 40406,
            RegistryError::VersionNotSoftDeleted { .. } => 40407,
            RegistryError::SubjectConfigNotFound(_) => 40408,
            RegistryError::SubjectModeNotFound(_) => 40409,
            RegistryError::Incompatible { .. } => 409,
            RegistryError::InvalidSchema(_) => 42201,
            RegistryError::InvalidVersion(_) => 42202,
            RegistryError::InvalidCompatibilityLevel => 42203,
            RegistryError::InvalidMode => 42204,
            RegistryError::OperationNotPermitted(_) => 42205,
            RegistryError::ReferenceExists { .. } => 42206,
            RegistryError::LimitExceeded(_) => 42205,
            RegistryError::BadRequest(_) => 400,
            RegistryError::NotDecodable(_) => 422,
            RegistryError::Store(_) => 50001,
        }
    }

    /// The HTTP status of the answer.
    pub fn status(&self) -> StatusCode {
        match self.error_code() {
            400 => StatusCode::BAD_REQUEST,
            409 => StatusCode::CONFLICT,
            422 => StatusCode::UNPROCESSABLE_ENTITY,
            c if (40400..40500).contains(&c) => StatusCode::NOT_FOUND,
            c if (42200..42300).contains(&c) => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RegistryError;

    #[test]
    fn codes_and_statuses_follow_confluent() {
        let cases = [
            (RegistryError::SubjectNotFound("s".into()), 40401, 404),
            (RegistryError::InvalidVersion("0".into()), 42202, 422),
            (
                RegistryError::Incompatible {
                    subject: "s".into(),
                    messages: vec![],
                },
                409,
                409,
            ),
            (RegistryError::Store("io".into()), 50001, 500),
            (RegistryError::BadRequest("x".into()), 400, 400),
            (RegistryError::NotDecodable("x".into()), 422, 422),
        ];
        for (e, code, status) in cases {
            assert_eq!(e.error_code(), code, "{e}");
            assert_eq!(e.status().as_u16(), status, "{e}");
        }
    }
}
