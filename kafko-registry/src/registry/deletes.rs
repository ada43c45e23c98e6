//! Soft and permanent deletes of subjects and versions.

use super::{Registry, resolve};
use crate::error::RegistryError;
use crate::record::{DeleteSubjectValue, Key, SchemaValue, encode_value};
use crate::version::VersionSpec;

impl Registry {
    /// Deletes a subject: soft (its live versions, returned), or permanently (every
    /// version, which must all be soft-deleted first).
    ///
    /// # Errors
    /// [`RegistryError::SubjectNotFound`], [`RegistryError::SubjectSoftDeleted`],
    /// [`RegistryError::SubjectNotSoftDeleted`], [`RegistryError::ReferenceExists`].
    pub async fn delete_subject(
        &self,
        subject: &str,
        permanent: bool,
    ) -> Result<Vec<u32>, RegistryError> {
        let _w = self.inner.writer.lock().await;
        self.check_writable(subject)?;
        let (writes, versions) = self.read(|s| {
            let vs = s
                .versions(subject)
                .ok_or_else(|| RegistryError::SubjectNotFound(subject.to_owned()))?;
            let live: Vec<u32> = vs
                .iter()
                .filter(|(_, e)| !e.deleted)
                .map(|(v, _)| *v)
                .collect();
            for v in vs.keys() {
                if !s.referenced_by(subject, *v).is_empty() {
                    return Err(RegistryError::ReferenceExists {
                        subject: subject.to_owned(),
                        version: *v,
                    });
                }
            }
            if permanent {
                if !live.is_empty() {
                    return Err(RegistryError::SubjectNotSoftDeleted(subject.to_owned()));
                }
                let all: Vec<u32> = vs.keys().copied().collect();
                let writes = all
                    .iter()
                    .map(|v| {
                        let key = Key::Schema {
                            subject: subject.to_owned(),
                            version: *v,
                        };
                        (key, None)
                    })
                    .collect();
                return Ok((writes, all));
            }
            let Some(&last) = live.last() else {
                return Err(RegistryError::SubjectSoftDeleted(subject.to_owned()));
            };
            let value = encode_value(&DeleteSubjectValue {
                subject: subject.to_owned(),
                version: last,
            });
            let key = Key::DeleteSubject {
                subject: subject.to_owned(),
            };
            Ok((vec![(key, Some(value))], live))
        })?;
        self.commit(writes).await?;
        Ok(versions)
    }

    /// Deletes one version: soft, or permanently (once soft-deleted).
    ///
    /// # Errors
    /// [`RegistryError::SubjectNotFound`], [`RegistryError::VersionNotFound`],
    /// [`RegistryError::VersionSoftDeleted`], [`RegistryError::VersionNotSoftDeleted`],
    /// [`RegistryError::ReferenceExists`].
    pub async fn delete_version(
        &self,
        subject: &str,
        spec: VersionSpec,
        permanent: bool,
    ) -> Result<u32, RegistryError> {
        let _w = self.inner.writer.lock().await;
        self.check_writable(subject)?;
        let (write, version) = self.read(|s| {
            // A numbered version is found soft-deleted or not (to say which); `latest`
            // of a soft delete is the newest live one.
            let any = permanent || matches!(spec, VersionSpec::Number(_));
            let v = resolve(s, subject, spec, any)?;
            if !v.deleted && permanent {
                return Err(RegistryError::VersionNotSoftDeleted {
                    subject: subject.to_owned(),
                    version: v.version,
                });
            }
            if v.deleted && !permanent {
                return Err(RegistryError::VersionSoftDeleted {
                    subject: subject.to_owned(),
                    version: v.version,
                });
            }
            if !s.referenced_by(subject, v.version).is_empty() {
                return Err(RegistryError::ReferenceExists {
                    subject: subject.to_owned(),
                    version: v.version,
                });
            }
            let key = Key::Schema {
                subject: subject.to_owned(),
                version: v.version,
            };
            let value = (!permanent).then(|| {
                encode_value(&SchemaValue {
                    subject: subject.to_owned(),
                    version: v.version,
                    id: v.id,
                    schema_type: v.schema.schema_type.wire(),
                    references: v.schema.references.clone(),
                    schema: v.schema.text.clone(),
                    deleted: true,
                })
            });
            Ok(((key, value), v.version))
        })?;
        self.commit(vec![write]).await?;
        Ok(version)
    }
}
