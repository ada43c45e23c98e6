//! [`MaxId`]: the largest schema id the registry has handed out or written, kept in
//! the state file `<data>/schema-registry/max-id` beside the `_schemas` topic. A new
//! schema's id is one past both this and every id the topic shows, so an id stays
//! taken after compaction removed every record of it, or after the topic was deleted.
//! The file is raised before the record that needs it is appended: before a new id is
//! written, and before any write, to cover the ids others wrote to the topic.

use std::sync::atomic::{AtomicU32, Ordering};

use kafko_core::Kafko;
use serde::{Deserialize, Serialize};

use crate::error::RegistryError;

const DIR: &str = "schema-registry";
const FILE: &str = "max-id";

/// The state file's body.
#[derive(Serialize, Deserialize)]
struct Body {
    version: u32,
    max_id: u32,
}

/// The largest id kept in the state file.
pub(crate) struct MaxId {
    kafko: Kafko,
    kept: AtomicU32,
}

impl MaxId {
    /// Reads the state file (none yet: 0).
    pub(crate) fn open(kafko: &Kafko) -> Result<MaxId, RegistryError> {
        let body: Option<Body> = kafko
            .read_state_file(DIR, FILE)
            .map_err(|e| RegistryError::Store(format!("reading {DIR}/{FILE}: {e}")))?;
        let kept = match body {
            None => 0,
            Some(b) if b.version == 1 => b.max_id,
            Some(b) => {
                return Err(RegistryError::Store(format!(
                    "{DIR}/{FILE} has version {}; this server reads version 1",
                    b.version
                )));
            }
        };
        Ok(MaxId {
            kafko: kafko.clone(),
            kept: AtomicU32::new(kept),
        })
    }

    /// The largest id the file holds.
    pub(crate) fn get(&self) -> u32 {
        self.kept.load(Ordering::Acquire)
    }

    /// Raises the file to `id` (durably) unless it holds `id` or more already. Callers
    /// hold the registry's writer lock, so raises do not race.
    pub(crate) async fn keep(&self, id: u32) -> Result<(), RegistryError> {
        if id <= self.get() {
            return Ok(());
        }
        let body = Body {
            version: 1,
            max_id: id,
        };
        self.kafko
            .write_state_file(DIR, FILE, &body)
            .await
            .map_err(|e| RegistryError::Store(format!("writing {DIR}/{FILE}: {e}")))?;
        self.kept.store(id, Ordering::Release);
        Ok(())
    }
}
