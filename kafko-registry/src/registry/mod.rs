//! [`Registry`]: the registry's operations over its [`State`], kept in step with the
//! `_schemas` topic. A write is checked against the state, appended and fsynced, and
//! then applied by reading it back from the log; writes are serialized, reads take a
//! shared lock after catching up with records appended meanwhile.
//!
//! This module holds the registry, its catching up and the checks its operations
//! share; the operations are in `reads` (subjects, versions, ids), `settings`
//! (compatibility levels and modes), `schemas` (register, compatibility checks),
//! `deletes`, and `decode` (a record read with the schema its id names).

mod decode;
mod deletes;
mod reads;
mod schemas;
mod settings;

use std::sync::{Arc, RwLock};

use kafko_core::{Kafko, TopicId};

use crate::compat;
use crate::error::RegistryError;
use crate::level::CompatibilityLevel;
use crate::limits::Limits;
use crate::max_id::MaxId;
use crate::record::Reference;
use crate::schema::SchemaType;
use crate::state::{State, StoredSchema};
use crate::store::{Store, Write};

use crate::version::VersionSpec;
pub use decode::{Decoded, MAX_DECODE_BYTES};

/// The level of a registry where none was set.
pub const DEFAULT_LEVEL: CompatibilityLevel = CompatibilityLevel::Backward;
/// Longest subject name, characters.
pub const MAX_SUBJECT_CHARS: usize = 255;

/// The schema registry over one log. Cheap to clone.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    /// The largest id ever handed out, as the data directory keeps it.
    max_id: MaxId,
    applied: RwLock<Applied>,
    writer: tokio::sync::Mutex<()>,
    limits: Limits,
}

struct Applied {
    state: State,
    /// The incarnation of `_schemas` the state was read from.
    incarnation: Option<TopicId>,
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
    /// (the topic is created by the first write), and reads the largest id handed out
    /// from the data directory.
    ///
    /// # Errors
    /// [`RegistryError::Store`] when the topic or the id's state file cannot be read.
    pub fn open(kafko: &Kafko, limits: Limits) -> Result<Registry, RegistryError> {
        // A schema's JSON escaping may grow it up to six times; references and fields
        // add little. Bounded by the log's own ceiling.
        let record_bytes = (limits.max_schema_bytes as u64)
            .saturating_mul(6)
            .saturating_add(64 * 1024)
            .min(kafko_core::config::MAX_BATCH_BYTES / 2);
        let store = Store::open(kafko, record_bytes)?;
        let registry = Registry {
            inner: Arc::new(Inner {
                store,
                max_id: MaxId::open(kafko)?,
                applied: RwLock::new(Applied {
                    state: State::default(),
                    incarnation: None,
                    next: 0,
                }),
                writer: tokio::sync::Mutex::new(()),
                limits,
            }),
        };
        registry.refresh()?;
        Ok(registry)
    }

    /// The limits the registry runs under.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Applies records appended since the last look.
    /// A `_schemas` topic deleted and created again (by a client) is read afresh.
    pub(super) fn refresh(&self) -> Result<(), RegistryError> {
        let (incarnation, end) = self.inner.store.end()?;
        let stale = {
            let a = self.inner.applied.read().map_err(poisoned)?;
            a.incarnation != incarnation || a.next < end
        };
        if stale {
            let mut a = self.inner.applied.write().map_err(poisoned)?;
            if a.incarnation != incarnation {
                a.state = State::default();
                a.next = 0;
                a.incarnation = incarnation;
            }
            let from = a.next;
            a.next = self.inner.store.catch_up(from, &mut a.state)?;
        }
        Ok(())
    }

    /// Runs `f` over the current state.
    pub(super) fn read<R>(
        &self,
        f: impl FnOnce(&State) -> Result<R, RegistryError>,
    ) -> Result<R, RegistryError> {
        self.refresh()?;
        let a = self.inner.applied.read().map_err(poisoned)?;
        f(&a.state)
    }

    /// Appends `writes` durably, then applies them. Every id seen so far is kept in the
    /// data directory first: a write may be the tombstone that lets compaction remove
    /// the last record of an id.
    pub(super) async fn commit(&self, writes: Vec<Write>) -> Result<(), RegistryError> {
        let seen = self.read(|s| Ok(s.max_id()))?;
        self.inner.max_id.keep(seen).await?;
        self.inner.store.append(writes).await?;
        self.refresh()
    }
}

pub(super) enum Plan {
    Existing(u32),
    New {
        id: u32,
        version: u32,
        level: CompatibilityLevel,
        olds: Vec<compat::Old>,
    },
}

/// `subject`'s version `spec`; soft-deleted ones only when `deleted`.
pub(super) fn resolve(
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

pub(super) fn check_subject(subject: &str) -> Result<(), RegistryError> {
    if subject.is_empty()
        || subject.chars().count() > MAX_SUBJECT_CHARS
        || subject.chars().any(char::is_control)
    {
        return Err(RegistryError::BadRequest(format!(
            "a subject name is 1 to {MAX_SUBJECT_CHARS} characters, none a control character"
        )));
    }
    Ok(())
}

pub(super) fn check_size(limits: &Limits, new: &NewSchema) -> Result<(), RegistryError> {
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
