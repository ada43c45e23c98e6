//! The process's file-descriptor budget, split between connections and the log: the
//! defaults of `--max-connections` and `--max-open-segment-files`, read from the soft
//! `RLIMIT_NOFILE`. Every listener and the log's descriptor cache size themselves from
//! here.

/// Descriptors kept back for the log (segments, indexes, state files) and the process
/// itself: a quarter of the limit, at least 64, at most half.
fn headroom(limit: u64) -> u64 {
    (limit / 4).max(64).min(limit / 2)
}

/// The default connection cap: the soft `RLIMIT_NOFILE` minus `headroom`, or 1,024 where
/// the limit cannot be read.
pub fn default_max_connections() -> usize {
    match soft_nofile_limit() {
        Some(limit) => usize::try_from(limit - headroom(limit))
            .unwrap_or(usize::MAX)
            .max(1),
        None => 1024,
    }
}

/// The default number of sealed segments' descriptors the log keeps open: half the
/// descriptors kept for the log beside the connections, at most 512 (at least 16).
pub fn default_max_open_segment_files() -> usize {
    soft_nofile_limit().map_or(512, |limit| {
        usize::try_from(headroom(limit) / 2)
            .unwrap_or(usize::MAX)
            .clamp(16, 512)
    })
}

/// The soft limit on open files, from `/proc/self/limits` (Linux); `None` elsewhere or
/// when unlimited.
fn soft_nofile_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_keeps_a_quarter_within_bounds() {
        assert_eq!(headroom(1024), 256);
        assert_eq!(headroom(100), 50);
        assert_eq!(headroom(200), 64);
        assert_eq!(headroom(1_048_576), 262_144);
    }
}
