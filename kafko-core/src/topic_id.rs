//! [`TopicId`]: what tells apart two topics created under the same name (a topic deleted
//! and created again), as Kafka's topic ids do. Generated at creation, stored in
//! `topic.json`, never reused.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

/// The identity of one topic incarnation: 128 random bits, shown as 32 lowercase hex
/// digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicId(u128);

/// Mixed into every id, so two ids drawn in the same instant differ.
static DRAWN: AtomicU64 = AtomicU64::new(0);

impl TopicId {
    /// A fresh id. `RandomState` carries keys seeded from the OS's randomness; hashing
    /// the time and a counter with two of them gives 128 unpredictable bits without a
    /// random-number dependency.
    pub(crate) fn generate() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = DRAWN.fetch_add(1, Ordering::Relaxed);
        let half = || {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(nanos);
            h.write_u64(n);
            h.write_u32(std::process::id());
            h.finish()
        };
        TopicId((u128::from(half()) << 64) | u128::from(half()))
    }
}

impl fmt::Display for TopicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl FromStr for TopicId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("a topic id is 32 hex digits, got '{s}'"));
        }
        u128::from_str_radix(s, 16)
            .map(TopicId)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differ_and_round_trip_through_text() {
        let (a, b) = (TopicId::generate(), TopicId::generate());
        assert_ne!(a, b);
        assert_eq!(a.to_string().parse::<TopicId>().unwrap(), a);
        assert!("xyz".parse::<TopicId>().is_err());
        assert!("0".repeat(31).parse::<TopicId>().is_err());
    }
}
