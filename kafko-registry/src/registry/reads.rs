//! Reads: schemas by id, subjects, versions, every schema, references to a version,
//! and the version holding a given schema.

use std::sync::Arc;

use super::{NewSchema, Registry, SubjectVersion, check_size, resolve};
use crate::error::RegistryError;
use crate::schema;
use crate::state::StoredSchema;
use crate::version::VersionSpec;

impl Registry {
    /// The schema under `id`.
    ///
    /// # Errors
    /// [`RegistryError::SchemaNotFound`].
    pub fn schema_by_id(&self, id: u32) -> Result<Arc<StoredSchema>, RegistryError> {
        self.read(|s| {
            s.schema(id)
                .cloned()
                .ok_or_else(|| RegistryError::SchemaNotFound(format!("Schema {id} not found")))
        })
    }

    /// The (subject, version) pairs holding `id`.
    ///
    /// # Errors
    /// [`RegistryError::SchemaNotFound`].
    pub fn id_versions(&self, id: u32, deleted: bool) -> Result<Vec<(String, u32)>, RegistryError> {
        self.read(|s| {
            if s.schema(id).is_none() {
                return Err(RegistryError::SchemaNotFound(format!(
                    "Schema {id} not found"
                )));
            }
            Ok(s.users(id)
                .into_iter()
                .filter(|(_, _, d)| deleted || !*d)
                .map(|(s, v, _)| (s, v))
                .collect())
        })
    }

    /// Subjects with a live version (with soft-deleted ones when `deleted`), starting
    /// with `prefix`.
    ///
    /// # Errors
    /// A store failure.
    pub fn subjects(&self, deleted: bool, prefix: &str) -> Result<Vec<String>, RegistryError> {
        self.read(|s| {
            Ok(s.subjects()
                .filter(|(name, versions)| {
                    name.starts_with(prefix) && (deleted || versions.values().any(|v| !v.deleted))
                })
                .map(|(name, _)| name.clone())
                .collect())
        })
    }

    /// Versions of `subject`.
    ///
    /// # Errors
    /// [`RegistryError::SubjectNotFound`] when it has none (live, unless `deleted`).
    pub fn versions(&self, subject: &str, deleted: bool) -> Result<Vec<u32>, RegistryError> {
        self.read(|s| {
            let list: Vec<u32> = s
                .versions(subject)
                .map(|vs| {
                    vs.iter()
                        .filter(|(_, e)| deleted || !e.deleted)
                        .map(|(v, _)| *v)
                        .collect()
                })
                .unwrap_or_default();
            if list.is_empty() {
                return Err(RegistryError::SubjectNotFound(subject.to_owned()));
            }
            Ok(list)
        })
    }

    /// One version of `subject`.
    ///
    /// # Errors
    /// [`RegistryError::SubjectNotFound`], [`RegistryError::VersionNotFound`].
    pub fn version(
        &self,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> Result<SubjectVersion, RegistryError> {
        self.read(|s| resolve(s, subject, spec, deleted))
    }

    /// Every version's schema, by subject and version (`latest_only`: the newest of
    /// each subject).
    ///
    /// # Errors
    /// A store failure.
    pub fn all_schemas(
        &self,
        prefix: &str,
        deleted: bool,
        latest_only: bool,
    ) -> Result<Vec<SubjectVersion>, RegistryError> {
        self.read(|s| {
            let mut out = Vec::new();
            for (subject, versions) in s.subjects() {
                if !subject.starts_with(prefix) {
                    continue;
                }
                let mut chosen: Vec<SubjectVersion> = versions
                    .iter()
                    .filter(|(_, e)| deleted || !e.deleted)
                    .filter_map(|(v, e)| {
                        Some(SubjectVersion {
                            subject: subject.clone(),
                            version: *v,
                            id: e.id,
                            schema: s.schema(e.id)?.clone(),
                            deleted: e.deleted,
                        })
                    })
                    .collect();
                if latest_only && let Some(last) = chosen.pop() {
                    chosen = vec![last];
                }
                out.extend(chosen);
            }
            Ok(out)
        })
    }

    /// Ids of the live schemas that reference `subject`'s version.
    ///
    /// # Errors
    /// As [`version`](Self::version).
    pub fn referenced_by(
        &self,
        subject: &str,
        spec: VersionSpec,
    ) -> Result<Vec<u32>, RegistryError> {
        self.read(|s| {
            let v = resolve(s, subject, spec, false)?;
            Ok(s.referenced_by(subject, v.version))
        })
    }

    /// The version of `subject` holding `new` (the same schema).
    ///
    /// # Errors
    /// [`RegistryError::SubjectNotFound`], [`RegistryError::SchemaNotFound`], or an
    /// invalid schema.
    pub fn lookup(
        &self,
        subject: &str,
        new: &NewSchema,
        deleted: bool,
    ) -> Result<SubjectVersion, RegistryError> {
        check_size(&self.inner.limits, new)?;
        let stored = self.prepare(new)?.text;
        self.read(|s| {
            let versions = s
                .versions(subject)
                .filter(|vs| deleted || vs.values().any(|e| !e.deleted))
                .ok_or_else(|| RegistryError::SubjectNotFound(subject.to_owned()))?;
            let identity = schema::identity(new.schema_type, &stored);
            let not_found = || RegistryError::SchemaNotFound("Schema not found".into());
            let id = s
                .id_of(new.schema_type, &identity, &new.references)
                .ok_or_else(not_found)?;
            let (version, e) = versions
                .iter()
                .rev()
                .find(|(_, e)| e.id == id && (deleted || !e.deleted))
                .ok_or_else(not_found)?;
            Ok(SubjectVersion {
                subject: subject.to_owned(),
                version: *version,
                id,
                schema: s.schema(id).cloned().ok_or_else(not_found)?,
                deleted: e.deleted,
            })
        })
    }
}
