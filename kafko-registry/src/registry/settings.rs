//! Compatibility levels and modes, global and per subject.

use super::{DEFAULT_LEVEL, Registry, check_subject};
use crate::error::RegistryError;
use crate::level::{CompatibilityLevel, Mode};
use crate::record::{ConfigValue, Key, ModeValue, encode_value};

impl Registry {
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
    pub(super) fn check_writable(&self, subject: &str) -> Result<Mode, RegistryError> {
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
}
