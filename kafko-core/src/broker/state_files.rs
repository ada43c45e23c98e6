//! Small state files that the layers above the log keep in its data directory, at
//! `<data>/<dir>/<name>`: framed and replaced atomically like the log's own (write
//! `<name>.tmp`, fsync, rename, fsync the directory; FORMAT.md, "State files").

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{KafkoError, Result};
use crate::state_file;
use crate::storage::{blocking, create_dir_durably};

use super::Kafko;

/// Directories of the data directory that belong to the log itself.
const RESERVED: [&str; 4] = ["topics", "groups", "internal", "trash"];

/// Refuses a `dir` or `name` that is not lowercase ASCII letters, digits and `-`, or a
/// `dir` the log uses.
fn check(dir: &str, name: &str) -> Result<()> {
    let plain = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    for part in [dir, name] {
        if !plain(part) {
            return Err(KafkoError::InvalidName {
                name: part.chars().take(64).collect(),
                reason: "a state file's directory and name are 1 to 64 of [a-z0-9-]",
            });
        }
    }
    if RESERVED.contains(&dir) {
        return Err(KafkoError::InvalidName {
            name: dir.to_owned(),
            reason: "the log's own directory",
        });
    }
    Ok(())
}

impl Kafko {
    /// Reads the state file `<data>/<dir>/<name>` as JSON; `Ok(None)` when it does not
    /// exist.
    ///
    /// # Errors
    /// `InvalidName` for a `dir` or `name` that is not 1 to 64 of `[a-z0-9-]`, or a
    /// directory of the log's own; `Corruption` for a file that fails its checks; the
    /// I/O failure of the read.
    pub fn read_state_file<T: DeserializeOwned>(&self, dir: &str, name: &str) -> Result<Option<T>> {
        check(dir, name)?;
        let path = self.inner.dir.join(dir).join(name);
        state_file::read(&*self.inner.storage, &path)
    }

    /// Replaces the state file `<data>/<dir>/<name>` with `value` as JSON, durably (the
    /// directory is created, durably, when missing), on a blocking thread.
    ///
    /// # Errors
    /// As [`read_state_file`](Self::read_state_file) for the names; `ShuttingDown`;
    /// `StorageFull` and the other I/O failures of the write.
    pub async fn write_state_file<T: Serialize>(
        &self,
        dir: &str,
        name: &str,
        value: &T,
    ) -> Result<()> {
        check(dir, name)?;
        self.check_open()?;
        let body =
            serde_json::to_value(value).map_err(|e| crate::error::InternalError::Serialize {
                path: self.inner.dir.join(dir).join(name),
                reason: e.to_string(),
            })?;
        let storage = self.inner.storage.clone();
        let dir = self.inner.dir.join(dir);
        let path = dir.join(name);
        blocking("writing a state file", move || {
            create_dir_durably(&*storage, &dir).map_err(|e| KafkoError::io("creating", &dir, e))?;
            state_file::write(&*storage, &path, &body)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn names_are_plain_and_outside_the_logs_directories() {
        assert!(check("schema-registry", "max-id").is_ok());
        for (dir, name) in [
            ("topics", "x"),
            ("internal", "x"),
            ("a/b", "x"),
            ("a", ".."),
            ("a", ""),
            ("A", "x"),
            ("a", "x.tmp"),
        ] {
            assert!(check(dir, name).is_err(), "{dir}/{name}");
        }
    }
}
