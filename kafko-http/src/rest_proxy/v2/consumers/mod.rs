//! v2 consumer instances, `/consumers/{group}/instances/{instance}/…`. Each instance is
//! a kafko group member on each subscribed topic (see `group_adapter`); reads long-poll
//! up to `timeout` ms (default the instance's `consumer.request.timeout.ms`) and count
//! as delivered once their answer went out in full (at-least-once; with auto-commit the
//! next read commits them).
//!
//! - `lifecycle`: creating an instance from its settings, and deleting it.
//! - `subscription`: subscribing to topics, and joining their groups.
//! - `records`: the waiting records read, and confirming it once delivered.
//! - `offsets`: committing, and reading the group's committed offsets.
//! - `assignments`: the owned partitions, and manual assignment.
//! - `positions`: seeks to offsets, timestamps, the beginning or the end.
//!
//! This module: [`InstanceAt`], how every request finds and locks its instance.

pub(crate) mod assignments;
pub(crate) mod lifecycle;
pub(crate) mod offsets;
pub(crate) mod positions;
pub(crate) mod records;
pub(crate) mod subscription;

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use tokio::sync::OwnedMutexGuard;

use super::instances::{self, Handle, InUse, Instance};
use crate::rest_proxy::ProxyPath;
use crate::rest_proxy::error::{ProxyError, ProxyResult};
use crate::state::AppState;

/// The consumer instance a request's path names, beside the server's state.
/// Extracting it looks nothing up: a handler parses its body first (a bad body is
/// refused before an unknown instance, as on the proxy), then calls [`InstanceAt::lock`].
pub(crate) struct InstanceAt {
    pub(crate) state: AppState,
    /// The registry of live instances (a request extension of the REST Proxy's routes).
    pub(crate) instances: Arc<instances::Instances>,
    group: String,
    name: String,
}

impl FromRequestParts<AppState> for InstanceAt {
    type Rejection = ProxyError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ProxyResult<Self> {
        let ProxyPath((group, name)) =
            ProxyPath::<(String, String)>::from_request_parts(parts, state).await?;
        let instances = registry(parts)?;
        Ok(InstanceAt {
            state: state.clone(),
            instances,
            group,
            name,
        })
    }
}

impl InstanceAt {
    /// The live instance, locked: 40403 if it is unknown, deleted or expired (an
    /// expired one is closed), or was closed while this request waited for the lock.
    pub(crate) async fn lock(&self) -> ProxyResult<Locked> {
        let registry = &self.instances;
        let in_use = match registry.get(&self.group, &self.name) {
            Ok(h) => h,
            Err(expired) => {
                if let Some(h) = expired {
                    instances::close(&self.state.kafko, registry.timeout(), vec![h]).await;
                }
                return Err(ProxyError::instance_not_found());
            }
        };
        let guard = in_use.handle().state.clone().lock_owned().await;
        if guard.closed {
            return Err(ProxyError::instance_not_found());
        }
        Ok(Locked { guard, in_use })
    }

    /// Removes the instance and closes it (it leaves its groups): 40403 if unknown.
    pub(crate) async fn remove(&self) -> ProxyResult<()> {
        let handle = self
            .instances
            .remove(&self.group, &self.name)
            .ok_or_else(ProxyError::instance_not_found)?;
        instances::close(&self.state.kafko, self.timeout(), vec![handle]).await;
        Ok(())
    }

    /// How long an idle instance lives, also its group members' session timeout.
    pub(crate) fn timeout(&self) -> Duration {
        self.instances.timeout()
    }
}

/// The instance registry the REST Proxy's routes carry as a request extension.
pub(crate) fn registry(parts: &Parts) -> ProxyResult<Arc<instances::Instances>> {
    parts
        .extensions
        .get::<Arc<instances::Instances>>()
        .cloned()
        .ok_or_else(|| {
            ProxyError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                crate::rest_proxy::error::KAFKA_ERROR,
                "the consumer instance registry is missing",
            )
        })
}

/// A locked live instance: the request has it to itself, and it is in use (cannot
/// expire), until this is dropped.
pub(crate) struct Locked {
    /// Dropped before `in_use`, so the instance is unlocked before it becomes idle.
    guard: OwnedMutexGuard<Instance>,
    in_use: InUse,
}

impl Locked {
    /// The instance's registry entry (to confirm a read later).
    pub(crate) fn handle(&self) -> &Arc<Handle> {
        self.in_use.handle()
    }
}

impl Deref for Locked {
    type Target = Instance;

    fn deref(&self) -> &Instance {
        &self.guard
    }
}

impl DerefMut for Locked {
    fn deref_mut(&mut self) -> &mut Instance {
        &mut self.guard
    }
}
