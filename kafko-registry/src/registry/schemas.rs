//! Registering a schema, and checking one against a subject's versions.

use super::{DEFAULT_LEVEL, NewSchema, Plan, Registry, check_size, check_subject, resolve};
use crate::compat::{self, Candidate};
use crate::error::RegistryError;
use crate::level::Mode;
use crate::record::{Key, SchemaValue, encode_value};
use crate::schema;
use crate::state::StoredSchema;
use crate::version::VersionSpec;

impl Registry {
    /// The schema's stored text and parsed form, its references resolved.
    pub(super) fn prepare(&self, new: &NewSchema) -> Result<Candidate, RegistryError> {
        let refs =
            self.read(|s| compat::resolve_references(s, &new.references, &self.inner.limits))?;
        let parsed = schema::parse(new.schema_type, &new.text, &refs)?;
        let text = if new.normalize {
            schema::normalized(&parsed, &new.text)?
        } else {
            new.text.clone()
        };
        Ok(Candidate { text, parsed })
    }

    /// Registers `new` under `subject`; returns its id. The same schema already live
    /// under the subject returns its id; the same schema under another subject keeps
    /// its id; a new one gets one past the largest id ever handed out or seen.
    ///
    /// # Errors
    /// An invalid schema, [`RegistryError::Incompatible`], a limit, a read-only mode, or
    /// a store failure.
    pub async fn register(&self, subject: &str, new: NewSchema) -> Result<u32, RegistryError> {
        check_subject(subject)?;
        check_size(&self.inner.limits, &new)?;
        let _w = self.inner.writer.lock().await;
        let mode = self.check_writable(subject)?;
        if mode != Mode::Import && (new.id.is_some() || new.version.is_some()) {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} is not in import mode; an id or version cannot be given"
            )));
        }
        let candidate = self.prepare(&new)?;
        let identity = schema::identity(new.schema_type, &candidate.text);
        let limits = self.inner.limits;
        let handed_out = self.inner.max_id.get();
        let plan = self.read(|s| {
            let existing = s.id_of(new.schema_type, &identity, &new.references);
            let versions = s.versions(subject);
            if let (Some(id), Some(vs)) = (existing, versions)
                && new.version.is_none()
                && vs.values().any(|e| e.id == id && !e.deleted)
            {
                return Ok(Plan::Existing(id));
            }
            if versions.is_none() && s.subject_count() >= limits.max_subjects {
                return Err(RegistryError::LimitExceeded(format!(
                    "the registry holds its limit of {} subjects",
                    limits.max_subjects
                )));
            }
            if versions.is_some_and(|vs| vs.len() >= limits.max_versions_per_subject) {
                return Err(RegistryError::LimitExceeded(format!(
                    "subject {subject} holds its limit of {} versions",
                    limits.max_versions_per_subject
                )));
            }
            let id = match new.id {
                Some(id) => {
                    if let Some(other) = s.schema(id)
                        && schema::identity(other.schema_type, &other.text) != identity
                    {
                        return Err(RegistryError::OperationNotPermitted(format!(
                            "Overwrite new schema with id {id} is not permitted"
                        )));
                    }
                    id
                }
                None => existing.unwrap_or_else(|| s.next_id().max(handed_out.saturating_add(1))),
            };
            let version = match new.version {
                Some(v) => {
                    if versions.and_then(|vs| vs.get(&v)).is_some_and(|e| e.id != id) {
                        return Err(RegistryError::OperationNotPermitted(format!(
                            "Overwrite of version {v} of subject {subject} with another schema is not permitted"
                        )));
                    }
                    v
                }
                None => versions
                    .and_then(|vs| vs.keys().next_back().copied())
                    .unwrap_or(0)
                    .saturating_add(1),
            };
            if version > i32::MAX as u32 {
                return Err(RegistryError::LimitExceeded(format!(
                    "subject {subject} has no version left below 2^31"
                )));
            }
            let level = s
                .subject_level(subject)
                .or(s.global_level())
                .unwrap_or(DEFAULT_LEVEL);
            let olds = if mode == Mode::Import {
                Vec::new()
            } else {
                compat::versions_to_check(s, subject, level, None)?
            };
            Ok(Plan::New {
                id,
                version,
                level,
                olds,
            })
        })?;
        let (id, version, level, olds) = match plan {
            Plan::Existing(id) => return Ok(id),
            Plan::New {
                id,
                version,
                level,
                olds,
            } => (id, version, level, olds),
        };
        let (candidate, messages) =
            compat::check(self, candidate, olds, level, &self.inner.limits).await?;
        if !messages.is_empty() {
            return Err(RegistryError::Incompatible {
                subject: subject.to_owned(),
                messages,
            });
        }
        let value = SchemaValue {
            subject: subject.to_owned(),
            version,
            id,
            schema_type: new.schema_type.wire(),
            references: new.references,
            schema: candidate.text,
            deleted: false,
        };
        let key = Key::Schema {
            subject: subject.to_owned(),
            version,
        };
        self.inner.max_id.keep(id).await?;
        self.commit(vec![(key, Some(encode_value(&value)))]).await?;
        Ok(id)
    }

    /// Checks `new` against `subject`'s version `spec` (or, with `None`, the versions
    /// its level checks a registration against); returns the incompatibilities.
    ///
    /// # Errors
    /// An invalid schema, an unknown subject or version, a limit.
    pub async fn check_compatibility(
        &self,
        subject: &str,
        spec: Option<VersionSpec>,
        new: NewSchema,
    ) -> Result<Vec<String>, RegistryError> {
        check_size(&self.inner.limits, &new)?;
        let candidate = self.prepare(&new)?;
        let (level, olds) = self.read(|s| {
            let level = s
                .subject_level(subject)
                .or(s.global_level())
                .unwrap_or(DEFAULT_LEVEL);
            if let Some(spec) = spec {
                resolve(s, subject, spec, false)?;
            }
            Ok((level, compat::versions_to_check(s, subject, level, spec)?))
        })?;
        let (_, messages) = compat::check(self, candidate, olds, level, &self.inner.limits).await?;
        Ok(messages)
    }

    /// Parses an earlier version for a compatibility check.
    pub(crate) fn parse_stored(
        &self,
        stored: &StoredSchema,
    ) -> Result<schema::Parsed, RegistryError> {
        let refs =
            self.read(|s| compat::resolve_references(s, &stored.references, &self.inner.limits))?;
        schema::parse(stored.schema_type, &stored.text, &refs)
    }
}
