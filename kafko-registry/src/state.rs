//! [`State`]: what the registry knows, rebuilt by applying the `_schemas` records in
//! log order ([`State::apply`]) — at start and after each write alike, so that the log
//! is the only source of truth.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::level::{CompatibilityLevel, Mode};
use crate::record::{ConfigValue, DeleteSubjectValue, Key, ModeValue, Reference, SchemaValue};
use crate::schema::{self, SchemaType};

/// A schema under its global id.
#[derive(Debug)]
pub struct StoredSchema {
    /// Its type.
    pub schema_type: SchemaType,
    /// Its text, as registered (or normalized when registered with `normalize`).
    pub text: String,
    /// Its references.
    pub references: Vec<Reference>,
}

/// What identifies "the same schema": type, identity form and references.
type Identity = (SchemaType, String, Vec<Reference>);

/// One version of a subject.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VersionEntry {
    pub(crate) id: u32,
    pub(crate) deleted: bool,
}

struct IdEntry {
    schema: Arc<StoredSchema>,
    identity: Identity,
    /// The (subject, version) pairs that use this id.
    users: BTreeSet<(String, u32)>,
}

/// The registry's state.
#[derive(Default)]
pub(crate) struct State {
    subjects: BTreeMap<String, BTreeMap<u32, VersionEntry>>,
    ids: BTreeMap<u32, IdEntry>,
    by_identity: HashMap<Identity, u32>,
    /// The ids whose schemas reference a (subject, version).
    referrers: HashMap<(String, i64), BTreeSet<u32>>,
    max_id: u32,
    global_level: Option<CompatibilityLevel>,
    levels: BTreeMap<String, CompatibilityLevel>,
    global_mode: Option<Mode>,
    modes: BTreeMap<String, Mode>,
}

impl State {
    /// Applies one record; returns why it was ignored, if it was. An empty value is a
    /// null one: Karapace writes its deletes so.
    pub(crate) fn apply(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), String> {
        let key = Key::decode(key).ok_or("not a registry key")?;
        let value = value.filter(|v| !v.is_empty());
        match (key, value) {
            (Key::Schema { subject, version }, Some(v)) => {
                let v: SchemaValue = serde_json::from_slice(v).map_err(|e| e.to_string())?;
                let ty = SchemaType::parse(v.schema_type.as_deref()).map_err(|e| e.to_string())?;
                self.put_version(
                    &subject,
                    version,
                    v.id,
                    v.deleted,
                    ty,
                    v.schema,
                    v.references,
                );
            }
            (Key::Schema { subject, version }, None) => self.remove_version(&subject, version),
            (Key::Config { subject }, v) => {
                let level = match v {
                    Some(v) => {
                        let c: ConfigValue =
                            serde_json::from_slice(v).map_err(|e| e.to_string())?;
                        Some(
                            CompatibilityLevel::parse(&c.compatibility_level)
                                .map_err(|e| e.to_string())?,
                        )
                    }
                    None => None,
                };
                match (subject, level) {
                    (None, l) => self.global_level = l,
                    (Some(s), Some(l)) => {
                        self.levels.insert(s, l);
                    }
                    (Some(s), None) => {
                        self.levels.remove(&s);
                    }
                }
            }
            (Key::Mode { subject }, v) => {
                let mode = match v {
                    Some(v) => {
                        let m: ModeValue = serde_json::from_slice(v).map_err(|e| e.to_string())?;
                        Some(Mode::parse(&m.mode).map_err(|e| e.to_string())?)
                    }
                    None => None,
                };
                match (subject, mode) {
                    (None, m) => self.global_mode = m,
                    (Some(s), Some(m)) => {
                        self.modes.insert(s, m);
                    }
                    (Some(s), None) => {
                        self.modes.remove(&s);
                    }
                }
            }
            (Key::DeleteSubject { .. }, Some(v)) => {
                let d: DeleteSubjectValue = serde_json::from_slice(v).map_err(|e| e.to_string())?;
                if let Some(versions) = self.subjects.get_mut(&d.subject) {
                    for (_, e) in versions.range_mut(..=d.version) {
                        e.deleted = true;
                    }
                }
            }
            (Key::DeleteSubject { .. }, None) | (Key::Noop, _) => {}
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn put_version(
        &mut self,
        subject: &str,
        version: u32,
        id: u32,
        deleted: bool,
        schema_type: SchemaType,
        text: String,
        references: Vec<Reference>,
    ) {
        if let Some(old) = self.subjects.get(subject).and_then(|v| v.get(&version))
            && old.id != id
        {
            self.release_id(old.id, subject, version);
        }
        self.subjects
            .entry(subject.to_owned())
            .or_default()
            .insert(version, VersionEntry { id, deleted });
        self.max_id = self.max_id.max(id);
        if !self.ids.contains_key(&id) {
            for r in &references {
                self.referrers
                    .entry((r.subject.clone(), r.version))
                    .or_default()
                    .insert(id);
            }
        }
        let entry = self.ids.entry(id).or_insert_with(|| {
            let identity = (
                schema_type,
                schema::identity(schema_type, &text),
                references.clone(),
            );
            IdEntry {
                schema: Arc::new(StoredSchema {
                    schema_type,
                    text,
                    references,
                }),
                identity,
                users: BTreeSet::new(),
            }
        });
        entry.users.insert((subject.to_owned(), version));
        let identity = entry.identity.clone();
        self.by_identity.entry(identity).or_insert(id);
    }

    fn remove_version(&mut self, subject: &str, version: u32) {
        let Some(versions) = self.subjects.get_mut(subject) else {
            return;
        };
        let Some(old) = versions.remove(&version) else {
            return;
        };
        if versions.is_empty() {
            self.subjects.remove(subject);
        }
        self.release_id(old.id, subject, version);
    }

    fn release_id(&mut self, id: u32, subject: &str, version: u32) {
        if let Some(e) = self.ids.get_mut(&id) {
            e.users.remove(&(subject.to_owned(), version));
            if e.users.is_empty()
                && let Some(e) = self.ids.remove(&id)
            {
                if self.by_identity.get(&e.identity) == Some(&id) {
                    self.by_identity.remove(&e.identity);
                }
                for r in &e.schema.references {
                    let key = (r.subject.clone(), r.version);
                    if let Some(ids) = self.referrers.get_mut(&key) {
                        ids.remove(&id);
                        if ids.is_empty() {
                            self.referrers.remove(&key);
                        }
                    }
                }
            }
        }
    }

    /// The largest id the topic showed since the state was read from its start.
    pub(crate) fn max_id(&self) -> u32 {
        self.max_id
    }

    /// One past every id the topic showed since the state was read from its start.
    pub(crate) fn next_id(&self) -> u32 {
        self.max_id.saturating_add(1)
    }

    /// The id of a schema with this identity, if any subject holds it.
    pub(crate) fn id_of(&self, ty: SchemaType, identity: &str, refs: &[Reference]) -> Option<u32> {
        self.by_identity
            .get(&(ty, identity.to_owned(), refs.to_vec()))
            .copied()
    }

    /// The schema under `id`.
    pub(crate) fn schema(&self, id: u32) -> Option<&Arc<StoredSchema>> {
        self.ids.get(&id).map(|e| &e.schema)
    }

    /// The (subject, version) pairs that use `id`, with whether each is deleted.
    pub(crate) fn users(&self, id: u32) -> Vec<(String, u32, bool)> {
        let Some(e) = self.ids.get(&id) else {
            return Vec::new();
        };
        e.users
            .iter()
            .map(|(s, v)| {
                let deleted = self.version(s, *v).is_none_or(|e| e.deleted);
                (s.clone(), *v, deleted)
            })
            .collect()
    }

    /// The versions of `subject` (soft-deleted ones included), ascending.
    pub(crate) fn versions(&self, subject: &str) -> Option<&BTreeMap<u32, VersionEntry>> {
        self.subjects.get(subject)
    }

    /// One version of a subject.
    pub(crate) fn version(&self, subject: &str, version: u32) -> Option<VersionEntry> {
        self.subjects.get(subject)?.get(&version).copied()
    }

    /// Every subject with its versions.
    pub(crate) fn subjects(&self) -> impl Iterator<Item = (&String, &BTreeMap<u32, VersionEntry>)> {
        self.subjects.iter()
    }

    /// How many subjects exist (with any version, live or soft-deleted).
    pub(crate) fn subject_count(&self) -> usize {
        self.subjects.len()
    }

    /// The global level as set, if set.
    pub(crate) fn global_level(&self) -> Option<CompatibilityLevel> {
        self.global_level
    }

    /// The subject's own level.
    pub(crate) fn subject_level(&self, subject: &str) -> Option<CompatibilityLevel> {
        self.levels.get(subject).copied()
    }

    /// The global mode as set, if set.
    pub(crate) fn global_mode(&self) -> Option<Mode> {
        self.global_mode
    }

    /// The subject's own mode.
    pub(crate) fn subject_mode(&self, subject: &str) -> Option<Mode> {
        self.modes.get(subject).copied()
    }

    /// The ids of the schemas, held by a live version, that reference `subject`'s
    /// `version`.
    pub(crate) fn referenced_by(&self, subject: &str, version: u32) -> Vec<u32> {
        let Some(ids) = self
            .referrers
            .get(&(subject.to_owned(), i64::from(version)))
        else {
            return Vec::new();
        };
        ids.iter()
            .copied()
            .filter(|id| {
                self.ids.get(id).is_some_and(|e| {
                    e.users
                        .iter()
                        .any(|(s, v)| self.version(s, *v).is_some_and(|x| !x.deleted))
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::encode_value;

    fn schema_record(subject: &str, version: u32, id: u32, deleted: bool) -> (Vec<u8>, Vec<u8>) {
        let key = Key::Schema {
            subject: subject.into(),
            version,
        }
        .encode();
        let value = encode_value(&SchemaValue {
            subject: subject.into(),
            version,
            id,
            schema_type: None,
            references: vec![],
            schema: format!("{{\"type\":\"fixed\",\"name\":\"F{id}\",\"size\":1}}"),
            deleted,
        });
        (key, value)
    }

    #[test]
    fn replay_builds_versions_ids_and_deletes() {
        let mut s = State::default();
        let (k, v) = schema_record("a", 1, 1, false);
        s.apply(&k, Some(&v)).unwrap();
        let (k, v) = schema_record("a", 2, 5, false);
        s.apply(&k, Some(&v)).unwrap();
        assert_eq!(s.next_id(), 6);
        let del = Key::DeleteSubject {
            subject: "a".into(),
        }
        .encode();
        let dv = encode_value(&DeleteSubjectValue {
            subject: "a".into(),
            version: 1,
        });
        s.apply(&del, Some(&dv)).unwrap();
        assert!(s.version("a", 1).unwrap().deleted);
        assert!(!s.version("a", 2).unwrap().deleted);
        // A permanent delete of the newest id still never gives it out again.
        s.apply(&k, None).unwrap();
        assert!(s.schema(5).is_none());
        // Karapace's permanent delete: an empty value.
        let (k1, v1) = schema_record("b", 1, 3, true);
        s.apply(&k1, Some(&v1)).unwrap();
        s.apply(&k1, Some(b"")).unwrap();
        assert!(s.version("b", 1).is_none() && s.schema(3).is_none());
        assert_eq!(s.next_id(), 6);
        let cfg = Key::Config { subject: None }.encode();
        s.apply(&cfg, Some(br#"{"compatibilityLevel":"FULL"}"#))
            .unwrap();
        assert_eq!(s.global_level(), Some(CompatibilityLevel::Full));
        assert!(s.apply(b"junk", None).is_err());
    }

    #[test]
    fn references_are_indexed_while_their_referrer_lives() {
        let mut s = State::default();
        let (k, v) = schema_record("a", 1, 1, false);
        s.apply(&k, Some(&v)).unwrap();
        let referrer = |deleted: bool| {
            encode_value(&SchemaValue {
                subject: "b".into(),
                version: 1,
                id: 2,
                schema_type: None,
                references: vec![Reference {
                    name: "F1".into(),
                    subject: "a".into(),
                    version: 1,
                }],
                schema: "{\"type\":\"record\",\"name\":\"B\",\"fields\":[]}".into(),
                deleted,
            })
        };
        let kb = Key::Schema {
            subject: "b".into(),
            version: 1,
        }
        .encode();
        s.apply(&kb, Some(&referrer(false))).unwrap();
        assert_eq!(s.referenced_by("a", 1), [2]);
        assert!(s.referenced_by("a", 2).is_empty());
        s.apply(&kb, Some(&referrer(true))).unwrap();
        assert!(
            s.referenced_by("a", 1).is_empty(),
            "a soft-deleted referrer"
        );
        s.apply(&kb, None).unwrap();
        assert!(s.referrers.is_empty());
    }
}
