//! A topic's partitions: a list that only grows (a topic's partition count may be
//! raised, never lowered), read without a lock. Readers hold `&PartitionHandle`s for as
//! long as they hold the topic: a partition, once added, never moves. The slots are
//! chunks of doubling size, allocated when first needed; the length is published after
//! the slot is filled, so a reader sees a partition whole or not at all.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::partition::handle::PartitionHandle;

/// Chunks of 1, 2, 4… slots: 2^CHUNKS − 1 partitions at most, past the 1,024 a topic
/// may have.
const CHUNKS: usize = 11;

/// Most partitions the list holds.
pub(crate) const CAPACITY: usize = (1 << CHUNKS) - 1;

type Chunk = Box<[OnceLock<PartitionHandle>]>;

pub(crate) struct PartitionList {
    chunks: [OnceLock<Chunk>; CHUNKS],
    len: AtomicUsize,
}

/// The chunk and the slot in it of partition `index`.
fn place(index: usize) -> (usize, usize) {
    let n = index + 1;
    let chunk = (usize::BITS - 1 - n.leading_zeros()) as usize;
    (chunk, n - (1 << chunk))
}

impl PartitionList {
    /// A list of `handles`, in partition order.
    ///
    /// # Panics
    /// Never for a topic's partitions: a topic has at most 1,024 (`TopicConfig::validate`).
    pub(crate) fn new(handles: Vec<PartitionHandle>) -> Self {
        let list = PartitionList {
            chunks: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicUsize::new(0),
        };
        for h in handles {
            let pushed = list.push(h);
            assert!(pushed.is_ok(), "a topic has at most {CAPACITY} partitions");
        }
        list
    }

    /// The number of partitions.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Partition `index`, if the list has it.
    pub(crate) fn get(&self, index: usize) -> Option<&PartitionHandle> {
        if index >= self.len() {
            return None;
        }
        let (chunk, slot) = place(index);
        self.chunks[chunk].get()?.get(slot)?.get()
    }

    /// The partitions in order, as many as there are when it starts.
    pub(crate) fn iter(&self) -> Iter<'_> {
        Iter {
            list: self,
            next: 0,
            end: self.len(),
        }
    }

    /// Adds the next partition. One caller at a time (the admin lock); the handle comes
    /// back when the list is full.
    pub(crate) fn push(&self, handle: PartitionHandle) -> Result<(), PartitionHandle> {
        let index = self.len();
        if index >= CAPACITY {
            return Err(handle);
        }
        let (chunk, slot) = place(index);
        let chunk = self.chunks[chunk].get_or_init(|| {
            (0..1usize << chunk)
                .map(|_| OnceLock::new())
                .collect::<Vec<_>>()
                .into_boxed_slice()
        });
        chunk[slot].set(handle)?;
        self.len.store(index + 1, Ordering::Release);
        Ok(())
    }
}

impl std::ops::Index<usize> for PartitionList {
    type Output = PartitionHandle;

    /// Partition `index`; callers index only partitions they checked exist.
    fn index(&self, index: usize) -> &PartitionHandle {
        match self.get(index) {
            Some(h) => h,
            None => panic!("partition {index} of {}", self.len()),
        }
    }
}

/// The partitions of a [`PartitionList`] in order.
pub(crate) struct Iter<'a> {
    list: &'a PartitionList,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a PartitionHandle;

    fn next(&mut self) -> Option<&'a PartitionHandle> {
        while self.next < self.end {
            self.next += 1;
            if let Some(h) = self.list.get(self.next - 1) {
                return Some(h);
            }
        }
        None
    }
}

impl<'a> IntoIterator for &'a PartitionList {
    type Item = &'a PartitionHandle;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_fill_chunks_of_doubling_size_in_order() {
        assert_eq!(place(0), (0, 0));
        assert_eq!(place(1), (1, 0));
        assert_eq!(place(2), (1, 1));
        assert_eq!(place(3), (2, 0));
        assert_eq!(place(6), (2, 3));
        assert_eq!(place(7), (3, 0));
        assert_eq!(place(CAPACITY - 1), (CHUNKS - 1, (1 << (CHUNKS - 1)) - 1));
        let mut seen = std::collections::HashSet::new();
        for i in 0..CAPACITY {
            let (chunk, slot) = place(i);
            assert!(slot < 1 << chunk);
            assert!(seen.insert((chunk, slot)));
        }
    }
}
