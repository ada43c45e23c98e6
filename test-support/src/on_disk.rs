//! A data directory read as the format lays it out: a partition's segment files and the
//! batches framed in them, and whole-directory copies. Shared with kafko's tests.

use std::path::{Path, PathBuf};

/// The segment log files of a partition, in offset order.
pub fn segments(dir: &Path, topic: &str, partition: u32) -> Vec<PathBuf> {
    let pdir = dir.join("topics").join(topic).join(partition.to_string());
    let mut logs: Vec<_> = std::fs::read_dir(&pdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

/// The segment log file of a partition with the highest base offset.
pub fn last_segment(dir: &Path, topic: &str, partition: u32) -> PathBuf {
    segments(dir, topic, partition).pop().unwrap()
}

/// `(record_count, framed_len)` of every batch in a partition's segment files.
pub fn batches_on_disk(dir: &Path, topic: &str, partition: u32) -> Vec<(u32, usize)> {
    let mut out = Vec::new();
    for log in segments(dir, topic, partition) {
        let bytes = std::fs::read(&log).unwrap();
        let mut at = 0;
        // Kafka's record batch (FORMAT.md's format 2): the length after itself at bytes
        // 8..12, the record count at 57..61, big-endian.
        while at + 61 <= bytes.len() {
            let length = u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
            if length == 0 {
                break;
            }
            let count = u32::from_be_bytes(bytes[at + 57..at + 61].try_into().unwrap());
            out.push((count, 12 + length));
            at += 12 + length;
        }
    }
    out
}

/// Copies a directory tree, every file as it is.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
