//! Consumer instances: what `POST /consumers/{group}` creates, by group and name, with
//! their settings, subscription and group memberships. An instance not used for
//! `consumer_instance_timeout` expires: the next call on it (or the next creation of any
//! instance) removes it, leaves its groups (or commits its manual assignment's positions
//! with auto-commit), and calls on it answer 40403. An instance with a request in
//! flight (a read waiting for records) is in use, never idle: it cannot expire until
//! that request ends, and its idle time counts from then.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kafko_core::{GroupMembership, Kafko, OffsetReset};

use crate::rest_proxy::content_type::EmbeddedFormat;
use crate::rest_proxy::group_adapter::GroupAdapter;
use crate::rest_proxy::v2::assignment::{Assignment, Source};

/// One consumer instance's state (behind its handle's lock).
pub(crate) struct Instance {
    pub(crate) group: String,
    pub(crate) name: String,
    pub(crate) format: EmbeddedFormat,
    pub(crate) auto_commit: bool,
    /// `consumer.request.timeout.ms`: how long a records read waits by default.
    pub(crate) request_wait: Duration,
    /// `auto.offset.reset` (also the group's setting; kept here for manual assignments).
    pub(crate) reset: OffsetReset,
    /// Subscribed topics, in the order given.
    pub(crate) subscription: Vec<String>,
    /// The instance's one membership in its group, over the subscribed topics that
    /// exist (joined again when one appears).
    pub(crate) member: Option<GroupMembership>,
    /// Manually assigned partitions (never together with a subscription).
    pub(crate) assignment: Assignment,
    /// Set once the instance is deleted or expired (a request that was waiting on the
    /// lock then answers 40403).
    pub(crate) closed: bool,
}

impl Instance {
    /// The group operations of this instance.
    pub(crate) fn groups<'a>(&'a self, kafko: &'a Kafko, session: Duration) -> GroupAdapter<'a> {
        GroupAdapter::new(kafko, &self.group, &self.name, session)
    }

    /// The manual assignment, beside what it reads from and commits to.
    pub(crate) fn assigned<'a>(
        &'a mut self,
        kafko: &'a Kafko,
        session: Duration,
    ) -> (&'a mut Assignment, Source<'a>) {
        let Instance {
            group,
            name,
            reset,
            assignment,
            ..
        } = self;
        let source = Source {
            kafko,
            groups: GroupAdapter::new(kafko, group, name, session),
            reset: *reset,
        };
        (assignment, source)
    }

    /// With auto-commit, commits the positions the manual assignment's reads delivered.
    pub(crate) async fn auto_commit_assigned(&mut self, kafko: &Kafko, session: Duration) {
        if self.auto_commit {
            let (assignment, source) = self.assigned(kafko, session);
            assignment.auto_commit(&source.groups).await;
        }
    }

    /// Drops the manual assignment, committing its positions first with auto-commit.
    pub(crate) async fn unassign(&mut self, kafko: &Kafko, session: Duration) {
        self.auto_commit_assigned(kafko, session).await;
        self.assignment = Assignment::default();
    }

    /// Leaves the group the instance joined and drops its manual assignment.
    pub(crate) async fn leave_all(&mut self, kafko: &Kafko, session: Duration) {
        self.unassign(kafko, session).await;
        if self.member.take().is_some()
            && let Err(e) = self.groups(kafko, session).leave().await
        {
            tracing::warn!(group = %self.group, error = %e, "consumer instance could not leave its group");
        }
    }

    /// The topics the instance reads as a member, by name.
    pub(crate) fn joined_topics(&self) -> Vec<String> {
        self.member
            .as_ref()
            .map(|m| m.assignment.iter().map(|(t, _)| t.clone()).collect())
            .unwrap_or_default()
    }
}

/// An instance and when it was last used.
pub(crate) struct Handle {
    /// Milliseconds since the registry's epoch.
    last_used: AtomicU64,
    /// Requests holding the instance now ([`InUse`]); while any does, it is not idle.
    in_use: AtomicUsize,
    /// Shared, so that a request can hold the lock as an owned guard.
    pub(crate) state: Arc<tokio::sync::Mutex<Instance>>,
}

/// Every live consumer instance.
pub(crate) struct Instances {
    epoch: Instant,
    timeout: Duration,
    map: std::sync::Mutex<HashMap<(String, String), Arc<Handle>>>,
}

impl Instances {
    pub(crate) fn new(timeout: Duration) -> Self {
        Instances {
            epoch: Instant::now(),
            timeout,
            map: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// How long an idle instance lives (also its group members' session timeout).
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether `h` is idle past the timeout: no request holds it, and none did for that
    /// long. Called with the map locked, as every change of `in_use` from 0 is.
    fn expired(&self, h: &Handle, now: u64) -> bool {
        h.in_use.load(Ordering::SeqCst) == 0
            && now.saturating_sub(h.last_used.load(Ordering::SeqCst))
                >= u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Arc<Handle>>> {
        // A panic while holding this lock cannot leave the map half-changed (each change
        // is one insert or remove), so a poisoned lock is still usable.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an instance; `None` if one of that name exists in the group. Expired
    /// instances are swept first (returned, for the caller to close).
    pub(crate) fn insert(&self, instance: Instance) -> (Option<Arc<Handle>>, Vec<Arc<Handle>>) {
        let now = self.now_ms();
        let mut map = self.lock();
        let expired: Vec<(String, String)> = map
            .iter()
            .filter(|(_, h)| self.expired(h, now))
            .map(|(k, _)| k.clone())
            .collect();
        let swept = expired.iter().filter_map(|k| map.remove(k)).collect();
        let key = (instance.group.clone(), instance.name.clone());
        if map.contains_key(&key) {
            return (None, swept);
        }
        let handle = Arc::new(Handle {
            last_used: AtomicU64::new(now),
            in_use: AtomicUsize::new(0),
            state: Arc::new(tokio::sync::Mutex::new(instance)),
        });
        map.insert(key, handle.clone());
        (Some(handle), swept)
    }

    /// The live instance, held in use until the returned guard drops (it cannot expire
    /// meanwhile). An expired one is removed and returned as `Err` for the caller to
    /// close.
    pub(crate) fn get(&self, group: &str, name: &str) -> Result<InUse, Option<Arc<Handle>>> {
        let now = self.now_ms();
        let mut map = self.lock();
        let key = (group.to_owned(), name.to_owned());
        match map.get(&key) {
            None => Err(None),
            Some(h) if self.expired(h, now) => Err(map.remove(&key)),
            Some(h) => {
                // Under the map's lock, so no sweep sees the instance idle from here on.
                h.in_use.fetch_add(1, Ordering::SeqCst);
                h.last_used.store(now, Ordering::SeqCst);
                Ok(InUse {
                    handle: h.clone(),
                    epoch: self.epoch,
                })
            }
        }
    }

    /// Removes an instance.
    pub(crate) fn remove(&self, group: &str, name: &str) -> Option<Arc<Handle>> {
        self.lock().remove(&(group.to_owned(), name.to_owned()))
    }
}

/// A request's hold on an instance: while it lives the instance is in use; dropped, it
/// marks the instance used now (so a long read's duration does not count as idleness).
pub(crate) struct InUse {
    handle: Arc<Handle>,
    epoch: Instant,
}

impl InUse {
    /// The instance held.
    pub(crate) fn handle(&self) -> &Arc<Handle> {
        &self.handle
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        // Used now first, so a sweep that sees no request also sees this time.
        self.handle.last_used.store(now, Ordering::SeqCst);
        self.handle.in_use.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Closes removed instances: leaves their groups and marks them closed.
pub(crate) async fn close(kafko: &Kafko, session: Duration, handles: Vec<Arc<Handle>>) {
    for h in handles {
        let mut state = h.state.lock().await;
        state.closed = true;
        state.leave_all(kafko, session).await;
    }
}
