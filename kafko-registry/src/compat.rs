//! Compatibility checks of a new schema against earlier versions: which versions a
//! level checks, the references each schema needs, and the bounded cost of a check.

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::RegistryError;
use crate::level::CompatibilityLevel;
use crate::limits::Limits;
use crate::record::Reference;
use crate::registry::Registry;
use crate::schema::{self, Parsed};
use crate::state::{State, StoredSchema};
use crate::version::VersionSpec;

/// A new schema: the text to store and its parsed form.
pub(crate) struct Candidate {
    pub(crate) text: String,
    pub(crate) parsed: Parsed,
}

/// An earlier version to check against.
pub(crate) type Old = (u32, Arc<StoredSchema>);

/// Every schema `refs` reference, directly or not, dependencies first, with the name
/// it is referenced by.
///
/// A reference names a live version (`-1`: the latest); the tree is at most
/// `max_reference_depth` deep and holds at most `max_references` schemas.
pub(crate) fn resolve_references(
    s: &State,
    refs: &[Reference],
    limits: &Limits,
) -> Result<Vec<schema::Resolved>, RegistryError> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for r in refs {
        visit(s, r, 1, limits, &mut seen, &mut out)?;
    }
    Ok(out)
}

fn visit(
    s: &State,
    r: &Reference,
    depth: usize,
    limits: &Limits,
    seen: &mut HashSet<(String, u32)>,
    out: &mut Vec<schema::Resolved>,
) -> Result<(), RegistryError> {
    if depth > limits.max_reference_depth {
        return Err(RegistryError::LimitExceeded(format!(
            "references are nested deeper than {} levels",
            limits.max_reference_depth
        )));
    }
    let missing = || {
        RegistryError::InvalidSchema(format!(
            "reference '{}' names subject '{}' version {}, which does not exist",
            r.name, r.subject, r.version
        ))
    };
    let versions = s.versions(&r.subject).ok_or_else(missing)?;
    let (version, entry) = if r.version == -1 {
        versions.iter().rev().find(|(_, e)| !e.deleted)
    } else {
        u32::try_from(r.version)
            .ok()
            .and_then(|v| versions.get_key_value(&v))
            .filter(|(_, e)| !e.deleted)
    }
    .ok_or_else(missing)?;
    if !seen.insert((r.subject.clone(), *version)) {
        return Ok(());
    }
    let stored = s.schema(entry.id).ok_or_else(missing)?;
    for inner in &stored.references {
        visit(s, inner, depth + 1, limits, seen, out)?;
    }
    out.push((r.name.clone(), stored.text.clone()));
    if out.len() > limits.max_references {
        return Err(RegistryError::LimitExceeded(format!(
            "the schema references more than {} schemas",
            limits.max_references
        )));
    }
    Ok(())
}

/// The versions of `subject` a schema is checked against: `spec`'s, or, with `None`,
/// the latest live one (every live one for a transitive level); none for `NONE`.
pub(crate) fn versions_to_check(
    s: &State,
    subject: &str,
    level: CompatibilityLevel,
    spec: Option<VersionSpec>,
) -> Result<Vec<Old>, RegistryError> {
    if level == CompatibilityLevel::None {
        return Ok(Vec::new());
    }
    let Some(versions) = s.versions(subject) else {
        return Ok(Vec::new());
    };
    let mut live = versions
        .iter()
        .rev()
        .filter(|(_, e)| !e.deleted)
        .filter(|(v, _)| match spec {
            None | Some(VersionSpec::Latest) => true,
            Some(VersionSpec::Number(n)) => **v == n,
        })
        .filter_map(|(v, e)| Some((*v, s.schema(e.id)?.clone())));
    Ok(if level.transitive() && spec.is_none() {
        live.collect()
    } else {
        live.next().into_iter().collect()
    })
}

/// Checks `candidate` against `olds` in the directions `level` asks for, on a blocking
/// thread; returns the candidate back with the incompatibilities found (empty: none).
///
/// # Errors
/// [`RegistryError::LimitExceeded`] when the schemas to compare exceed
/// `max_compatibility_bytes` together.
pub(crate) async fn check(
    registry: &Registry,
    candidate: Candidate,
    olds: Vec<Old>,
    level: CompatibilityLevel,
    limits: &Limits,
) -> Result<(Candidate, Vec<String>), RegistryError> {
    let cost = olds.iter().fold(0usize, |sum, (_, old)| {
        sum.saturating_add(old.text.len())
            .saturating_add(candidate.text.len())
    });
    if cost > limits.max_compatibility_bytes {
        return Err(RegistryError::LimitExceeded(format!(
            "checking against {} versions compares {cost} bytes of schemas; at most {} are allowed",
            olds.len(),
            limits.max_compatibility_bytes
        )));
    }
    if olds.is_empty() {
        return Ok((candidate, Vec::new()));
    }
    let registry = registry.clone();
    tokio::task::spawn_blocking(move || {
        let mut messages = Vec::new();
        for (version, old) in &olds {
            let parsed = match registry.parse_stored(old) {
                Ok(p) => p,
                Err(e) => {
                    messages.push(format!("version {version} cannot be checked: {e}"));
                    continue;
                }
            };
            if level.backward() {
                for m in schema::incompatibilities(&parsed, &candidate.parsed) {
                    messages.push(format!(
                        "the new schema cannot read data written with version {version}: {m}"
                    ));
                }
            }
            if level.forward() {
                for m in schema::incompatibilities(&candidate.parsed, &parsed) {
                    messages.push(format!(
                        "version {version} cannot read data written with the new schema: {m}"
                    ));
                }
            }
        }
        (candidate, messages)
    })
    .await
    .map_err(|e| RegistryError::Store(format!("the compatibility check failed: {e}")))
}
