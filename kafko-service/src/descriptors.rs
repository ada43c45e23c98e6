//! The process's file-descriptor budget, split between connections and the log: the
//! defaults of `--max-connections`, `--max-open-segment-files`, `--max-partitions` and
//! `--max-topics`, read from the soft `RLIMIT_NOFILE`. Every listener, the log's
//! descriptor cache and its topic limits size themselves from here, so that no client
//! can take the log to the limit: past it every file the log opens fails. At start the
//! server raises its soft limit to the hard one ([`raise_nofile_limit`]), as the JVM and
//! Go runtimes do, so that a shell's default soft limit (often 1,024) does not size a
//! server the system allows more.

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; the soft limit in force after it
/// (unchanged where raising is refused or the platform has none).
///
/// # Errors
/// The system's refusal to read or set the limit.
pub fn raise_nofile_limit() -> std::io::Result<u64> {
    rlimit::increase_nofile_limit(u64::MAX)
}

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

/// Descriptors of the log's share kept for other files than partitions' active segments
/// and the sealed segments' cache: state and group files, a topic being created, the
/// listeners and the runtime's own.
const LOG_RESERVE: u64 = 32;

/// The default partition cap (all topics together): each partition keeps its active
/// segment open, so the descriptors kept for the log less the sealed segments' cache
/// (`open_segment_files`) and a reserve; at least 16. `None` (unlimited) where the
/// limit cannot be read.
pub fn default_max_partitions(open_segment_files: usize) -> Option<u64> {
    soft_nofile_limit().map(|limit| partitions_within(limit, open_segment_files))
}

/// The default topic cap: as many as partitions, since every topic has one at least.
pub fn default_max_topics(open_segment_files: usize) -> Option<u64> {
    default_max_partitions(open_segment_files)
}

fn partitions_within(limit: u64, open_segment_files: usize) -> u64 {
    headroom(limit)
        .saturating_sub(u64::try_from(open_segment_files).unwrap_or(u64::MAX))
        .saturating_sub(LOG_RESERVE)
        .max(16)
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

    #[test]
    fn partitions_get_the_logs_share_less_the_segment_cache() {
        // 4,096: 1,024 for the log, 512 of them cached sealed segments.
        assert_eq!(partitions_within(4096, 512), 480);
        assert_eq!(partitions_within(1024, 128), 96);
        assert_eq!(partitions_within(256, 32), 16);
        assert_eq!(partitions_within(1_048_576, 512), 261_600);
    }
}
