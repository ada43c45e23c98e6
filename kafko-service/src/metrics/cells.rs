//! Values that every worker thread adds to without sharing a cache line with the others.
//!
//! A counter that every request bumps, kept in one atomic, moves its cache line from core
//! to core on every request: on the one-record produce that cost more than the
//! additions themselves. A [`Sharded`] value has one copy per shard, each on cache
//! lines of its own; a thread always adds to the same shard (handed out round-robin the
//! first time it counts), and a scrape sums the shards. Threads past [`SHARDS`] share
//! shards, which stays correct (the cells are atomics), only slower.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Shards of each value: the worker threads of the machines kafko is sized for. A power
/// of two, so a thread's number picks its shard with a mask.
pub(super) const SHARDS: usize = 8;
const _: () = assert!(SHARDS.is_power_of_two());

/// A value alone on its cache lines (two: the adjacent-line prefetcher pairs them).
#[repr(align(128))]
struct Padded<T>(T);

/// One copy of `T` per shard.
pub(super) struct Sharded<T> {
    shards: Box<[Padded<T>; SHARDS]>,
}

impl<T> Sharded<T> {
    /// Every shard made by `make`.
    pub(super) fn new_with(make: impl Fn() -> T) -> Self {
        Sharded {
            shards: Box::new(std::array::from_fn(|_| Padded(make()))),
        }
    }

    /// The calling thread's shard.
    pub(super) fn local(&self) -> &T {
        &self.shards[shard_index()].0
    }

    /// Every shard, to be summed.
    pub(super) fn all(&self) -> impl Iterator<Item = &T> {
        self.shards.iter().map(|p| &p.0)
    }
}

impl<T: Default> Default for Sharded<T> {
    fn default() -> Self {
        Sharded::new_with(T::default)
    }
}

/// The calling thread's shard number (below [`SHARDS`]), fixed for the thread's life.
fn shard_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        // Const-initialised: reading it needs no lazy-initialisation check.
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|index| {
        let mut i = index.get();
        if i == usize::MAX {
            i = NEXT.fetch_add(1, Ordering::Relaxed) & (SHARDS - 1);
            index.set(i);
        }
        i & (SHARDS - 1)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;

    #[test]
    fn additions_from_many_threads_sum_to_their_total() {
        let counter: Sharded<AtomicU64> = Sharded::default();
        std::thread::scope(|s| {
            for _ in 0..(2 * SHARDS + 3) {
                s.spawn(|| {
                    for _ in 0..1000 {
                        counter.local().fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        let total: u64 = counter.all().map(|c| c.load(Ordering::Relaxed)).sum();
        assert_eq!(total, (2 * SHARDS as u64 + 3) * 1000);
    }

    #[test]
    fn a_thread_keeps_its_shard_and_shards_do_not_share_cache_lines() {
        let counter: Sharded<AtomicU64> = Sharded::default();
        let first: *const AtomicU64 = counter.local();
        assert!(std::ptr::eq(first, counter.local()));
        let addresses: Vec<usize> = counter.all().map(|c| c as *const _ as usize).collect();
        assert!(addresses.windows(2).all(|w| w[1] - w[0] >= 128));
    }
}
