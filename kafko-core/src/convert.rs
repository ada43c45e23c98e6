//! Integer conversions whose range an invariant (or saturation) makes safe, each with
//! its reason: what would otherwise be an `as` cast that could silently truncate.

use std::time::Duration;

/// A count or index of a topic's partitions (or of a group's members) as a `u32`.
/// Partitions are numbered by `u32` and a topic's list is built from its config's `u32`
/// count, so the value fits; were it ever larger, it saturates rather than wrapping to
/// a small, wrong number.
pub(crate) fn u32_saturating(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A size or count kept as `u64` (on disk, in a config) as a `usize`, to size a buffer
/// or compare with a length. Exact on 64-bit targets; on a 32-bit one a value past the
/// address space saturates (a limit that large is no limit there).
pub(crate) fn usize_saturating(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Whole milliseconds of `d`, saturating (past ~584 million years).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_are_exact_in_range_and_saturate_beyond() {
        assert_eq!(u32_saturating(7), 7);
        assert_eq!(u32_saturating(usize::MAX), u32::MAX);
        assert_eq!(usize_saturating(1 << 20), 1 << 20);
        assert_eq!(millis(Duration::from_secs(2)), 2000);
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }
}
