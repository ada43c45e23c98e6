//! The member ids a group handed out through JoinGroup's member-id handshake and that
//! have not joined yet: each is valid for the session timeout of the join that asked
//! for it (as in Kafka), kept in the order they expire, so expiring costs only the ids
//! that go, and capped per group (the one closest to expiry makes room for a new one).

use std::collections::{BTreeSet, HashMap};

use tokio::time::Instant;

/// Estimated heap bytes of one pending id beyond its text (held twice): two map and set
/// entries with their `String` headers and the deadline.
const ENTRY_OVERHEAD: usize = 128;

/// A group's pending member ids.
#[derive(Debug, Default)]
pub(crate) struct PendingIds {
    by_id: HashMap<String, Instant>,
    by_deadline: BTreeSet<(Instant, String)>,
    bytes: usize,
}

impl PendingIds {
    /// Adds `id`, valid until `until`; at `cap` ids, the one closest to expiry goes first.
    pub(crate) fn insert(&mut self, id: String, until: Instant, cap: usize) {
        self.remove(&id);
        while self.by_id.len() >= cap.max(1) {
            let Some((_, first)) = self.by_deadline.pop_first() else {
                break;
            };
            self.forget(&first);
        }
        self.bytes += entry_bytes(&id);
        self.by_deadline.insert((until, id.clone()));
        self.by_id.insert(id, until);
    }

    /// Removes `id`; whether it was pending.
    pub(crate) fn remove(&mut self, id: &str) -> bool {
        match self.by_id.remove(id) {
            Some(until) => {
                self.by_deadline.remove(&(until, id.to_owned()));
                self.bytes -= entry_bytes(id);
                true
            }
            None => false,
        }
    }

    /// Whether `id` is pending (and not expired as of the last [`expire`](Self::expire)).
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Drops the ids whose deadline passed; costs the ids dropped.
    pub(crate) fn expire(&mut self, now: Instant) {
        while let Some((until, _)) = self.by_deadline.first() {
            if *until > now {
                break;
            }
            if let Some((_, id)) = self.by_deadline.pop_first() {
                self.forget(&id);
            }
        }
    }

    /// How many ids are pending.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Estimated bytes the pending ids hold.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Forgets `id` in the map (already out of the deadline order).
    fn forget(&mut self, id: &str) {
        if self.by_id.remove(id).is_some() {
            self.bytes -= entry_bytes(id);
        }
    }
}

fn entry_bytes(id: &str) -> usize {
    2 * id.len() + ENTRY_OVERHEAD
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn ids_expire_in_deadline_order_and_the_cap_drops_the_closest_to_expiry() {
        let now = Instant::now();
        let mut p = PendingIds::default();
        p.insert("a".into(), now + Duration::from_secs(3), 2);
        p.insert("b".into(), now + Duration::from_secs(1), 2);
        p.insert("c".into(), now + Duration::from_secs(5), 2);
        assert!(!p.contains("b"), "the cap made room by dropping b");
        assert!(p.contains("a") && p.contains("c"));
        p.expire(now + Duration::from_secs(4));
        assert!(!p.contains("a") && p.contains("c"));
        assert_eq!(p.len(), 1);
        assert!(p.remove("c"));
        assert_eq!((p.len(), p.bytes()), (0, 0));
    }
}
