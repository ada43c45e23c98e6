//! [`Registry`]: the registry's operations over its [`State`], kept in step with the
//! `_schemas` topic. A write is checked against the state, appended and fsynced, and
//! then applied by reading it back from the log; writes are serialized, reads take a
//! shared lock after catching up with records appended meanwhile.

use std::sync::{Arc, RwLock};

use kafko_core::Kafko;

use crate::compat::{self, Candidate};
use crate::error::RegistryError;
use crate::level::{CompatibilityLevel, Mode};
use crate::limits::Limits;
use crate::record::{
    ConfigValue, DeleteSubjectValue, Key, ModeValue, Reference, SchemaValue, encode_value,
};
use crate::schema::{self, SchemaType};
use crate::state::{State, StoredSchema};
use crate::store::{Store, Write};
use crate::version::VersionSpec;

/// The level of a registry where none was set.
pub const DEFAULT_LEVEL: CompatibilityLevel = CompatibilityLevel::Backward;
/// Longest subject name, bytes.
pub const MAX_SUBJECT_BYTES: usize = 255;

/// The schema registry over one log. Cheap to clone.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    applied: RwLock<Applied>,
    writer: tokio::sync::Mutex<()>,
    limits: Limits,
}

struct Applied {
    state: State,
    /// The offset of the next record to apply.
    next: u64,
}

/// A schema to register, look up or check, as a request gives it.
#[derive(Debug, Clone)]
pub struct NewSchema {
    /// Its type.
    pub schema_type: SchemaType,
    /// Its text.
    pub text: String,
    /// Its references.
    pub references: Vec<Reference>,
    /// Store and compare its normalized form.
    pub normalize: bool,
    /// In IMPORT mode: the id to register it under.
    pub id: Option<u32>,
    /// In IMPORT mode: the version to register it as.
    pub version: Option<u32>,
}

/// A subject's version with its schema.
#[derive(Debug, Clone)]
pub struct SubjectVersion {
    /// The subject.
    pub subject: String,
    /// The version.
    pub version: u32,
    /// The schema id.
    pub id: u32,
    /// The schema.
    pub schema: Arc<StoredSchema>,
    /// Soft-deleted.
    pub deleted: bool,
}

fn poisoned<T>(_: T) -> RegistryError {
    RegistryError::Store("the registry's state lock is poisoned".into())
}

impl Registry {
    /// Opens the registry on `kafko`'s `_schemas` topic, replaying every record in it
    /// (the topic is created by the first write).
    ///
    /// # Errors
    /// [`RegistryError::Store`] when the topic cannot be created or read.
    pub fn open(kafko: &Kafko, limits: Limits) -> Result<Registry, RegistryError> {
        // A schema's JSON escaping may grow it up to six times; references and fields
        // add little. Bounded by the log's own ceiling.
        let record_bytes = (limits.max_schema_bytes as u64)
            .saturating_mul(6)
            .saturating_add(64 * 1024)
            .min(kafko_core::config::MAX_BATCH_BYTES / 2);
        let store = Store::open(kafko, record_bytes)?;
        let mut state = State::default();
        let next = store.catch_up(0, &mut state)?;
        Ok(Registry {
            inner: Arc::new(Inner {
                store,
                applied: RwLock::new(Applied { state, next }),
                writer: tokio::sync::Mutex::new(()),
                limits,
            }),
        })
    }

    /// The limits the registry runs under.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Applies records appended since the last look.
    fn refresh(&self) -> Result<(), RegistryError> {
        let end = self.inner.store.end()?;
        let behind = self.inner.applied.read().map_err(poisoned)?.next < end;
        if behind {
            let mut a = self.inner.applied.write().map_err(poisoned)?;
            let from = a.next;
            a.next = self.inner.store.catch_up(from, &mut a.state)?;
        }
        Ok(())
    }

    /// Runs `f` over the current state.
    fn read<R>(
        &self,
        f: impl FnOnce(&State) -> Result<R, RegistryError>,
    ) -> Result<R, RegistryError> {
        self.refresh()?;
        let a = self.inner.applied.read().map_err(poisoned)?;
        f(&a.state)
    }

    /// Appends `writes` durably, then applies them.
    async fn commit(&self, writes: Vec<Write>) -> Result<(), RegistryError> {
        self.inner.store.append(writes).await?;
        self.refresh()
    }

    // ---- reads ----

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

    // ---- configs and modes ----

    /// The level of `subject` (its own; with `default_to_global`, else the global one),
    /// or the global level.
    ///
    /// # Errors
    /// [`RegistryError::SubjectConfigNotFound`].
    pub fn level(
        &self,
        subject: Option<&str>,
        default_to_global: bool,
    ) -> Result<CompatibilityLevel, RegistryError> {
        self.read(|s| {
            let global = s.global_level().unwrap_or(DEFAULT_LEVEL);
            match subject {
                None => Ok(global),
                Some(sub) => match s.subject_level(sub) {
                    Some(l) => Ok(l),
                    None if default_to_global => Ok(global),
                    None => Err(RegistryError::SubjectConfigNotFound(sub.to_owned())),
                },
            }
        })
    }

    /// Sets a level.
    ///
    /// # Errors
    /// A store failure.
    pub async fn set_level(
        &self,
        subject: Option<&str>,
        level: CompatibilityLevel,
    ) -> Result<(), RegistryError> {
        if let Some(s) = subject {
            check_subject(s)?;
        }
        let _w = self.inner.writer.lock().await;
        let value = encode_value(&ConfigValue {
            compatibility_level: level.as_str().to_owned(),
        });
        let key = Key::Config {
            subject: subject.map(str::to_owned),
        };
        self.commit(vec![(key, Some(value))]).await
    }

    /// Removes a level; returns the one it had.
    ///
    /// # Errors
    /// [`RegistryError::SubjectConfigNotFound`] for a subject with no level of its own.
    pub async fn delete_level(
        &self,
        subject: Option<&str>,
    ) -> Result<CompatibilityLevel, RegistryError> {
        let _w = self.inner.writer.lock().await;
        let previous = self.level(subject, false)?;
        let key = Key::Config {
            subject: subject.map(str::to_owned),
        };
        self.commit(vec![(key, None)]).await?;
        Ok(previous)
    }

    /// The mode of `subject` (its own; with `default_to_global`, else the global one),
    /// or the global mode.
    ///
    /// # Errors
    /// [`RegistryError::SubjectModeNotFound`].
    pub fn mode(
        &self,
        subject: Option<&str>,
        default_to_global: bool,
    ) -> Result<Mode, RegistryError> {
        self.read(|s| {
            let global = s.global_mode().unwrap_or(Mode::ReadWrite);
            match subject {
                None => Ok(global),
                Some(sub) => match s.subject_mode(sub) {
                    Some(m) => Ok(m),
                    None if default_to_global => Ok(global),
                    None => Err(RegistryError::SubjectModeNotFound(sub.to_owned())),
                },
            }
        })
    }

    /// Sets a mode. IMPORT is refused while schemas exist, unless `force`.
    ///
    /// # Errors
    /// [`RegistryError::OperationNotPermitted`], or a store failure.
    pub async fn set_mode(
        &self,
        subject: Option<&str>,
        mode: Mode,
        force: bool,
    ) -> Result<(), RegistryError> {
        if let Some(s) = subject {
            check_subject(s)?;
        }
        let _w = self.inner.writer.lock().await;
        if mode == Mode::Import && !force {
            let any = self.read(|s| {
                Ok(match subject {
                    None => s.subject_count() > 0,
                    Some(sub) => s.versions(sub).is_some(),
                })
            })?;
            if any {
                return Err(RegistryError::OperationNotPermitted(
                    "Cannot import since found existing subjects".into(),
                ));
            }
        }
        let value = encode_value(&ModeValue {
            mode: mode.as_str().to_owned(),
        });
        let key = Key::Mode {
            subject: subject.map(str::to_owned),
        };
        self.commit(vec![(key, Some(value))]).await
    }

    /// Removes a subject's mode; returns the one it had.
    ///
    /// # Errors
    /// [`RegistryError::SubjectModeNotFound`].
    pub async fn delete_mode(&self, subject: &str) -> Result<Mode, RegistryError> {
        let _w = self.inner.writer.lock().await;
        let previous = self.mode(Some(subject), false)?;
        let key = Key::Mode {
            subject: Some(subject.to_owned()),
        };
        self.commit(vec![(key, None)]).await?;
        Ok(previous)
    }

    /// Refuses a write to `subject` in a read-only mode.
    fn check_writable(&self, subject: &str) -> Result<Mode, RegistryError> {
        let mode = self.read(|s| {
            let global = s.global_mode().unwrap_or(Mode::ReadWrite);
            Ok(if global == Mode::ReadOnlyOverride {
                global
            } else {
                s.subject_mode(subject).unwrap_or(global)
            })
        })?;
        if mode.read_only() {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} is in read-only mode"
            )));
        }
        Ok(mode)
    }

    // ---- schemas ----

    /// The schema's stored text and parsed form, its references resolved.
    fn prepare(&self, new: &NewSchema) -> Result<Candidate, RegistryError> {
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
    /// its id; a new one gets one past the largest id ever seen.
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
                None => existing.unwrap_or_else(|| s.next_id()),
            };
            let version = match new.version {
                Some(v) => v,
                None => versions
                    .and_then(|vs| vs.keys().next_back().copied())
                    .unwrap_or(0)
                    .saturating_add(1),
            };
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

    // ---- deletes ----

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

enum Plan {
    Existing(u32),
    New {
        id: u32,
        version: u32,
        level: CompatibilityLevel,
        olds: Vec<compat::Old>,
    },
}

/// `subject`'s version `spec`; soft-deleted ones only when `deleted`.
fn resolve(
    s: &State,
    subject: &str,
    spec: VersionSpec,
    deleted: bool,
) -> Result<SubjectVersion, RegistryError> {
    let versions = s
        .versions(subject)
        .filter(|vs| deleted || vs.values().any(|e| !e.deleted))
        .ok_or_else(|| RegistryError::SubjectNotFound(subject.to_owned()))?;
    let not_found = || RegistryError::VersionNotFound {
        version: spec.to_string(),
    };
    let (version, e) = match spec {
        VersionSpec::Latest => versions.iter().rev().find(|(_, e)| deleted || !e.deleted),
        VersionSpec::Number(n) => versions
            .get_key_value(&n)
            .filter(|(_, e)| deleted || !e.deleted),
    }
    .ok_or_else(not_found)?;
    Ok(SubjectVersion {
        subject: subject.to_owned(),
        version: *version,
        id: e.id,
        schema: s.schema(e.id).cloned().ok_or_else(not_found)?,
        deleted: e.deleted,
    })
}

fn check_subject(subject: &str) -> Result<(), RegistryError> {
    if subject.is_empty()
        || subject.len() > MAX_SUBJECT_BYTES
        || subject.chars().any(char::is_control)
    {
        return Err(RegistryError::BadRequest(format!(
            "a subject name is 1 to {MAX_SUBJECT_BYTES} bytes without control characters"
        )));
    }
    Ok(())
}

fn check_size(limits: &Limits, new: &NewSchema) -> Result<(), RegistryError> {
    if new.text.len() > limits.max_schema_bytes {
        return Err(RegistryError::LimitExceeded(format!(
            "the schema is {} bytes; at most {} are accepted",
            new.text.len(),
            limits.max_schema_bytes
        )));
    }
    if new.references.len() > limits.max_references {
        return Err(RegistryError::LimitExceeded(format!(
            "the schema has {} references; at most {} are accepted",
            new.references.len(),
            limits.max_references
        )));
    }
    Ok(())
}
