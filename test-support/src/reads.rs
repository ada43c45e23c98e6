//! Reading a partition by topic name, as the tests do: [`offsets`], one [`read`], and
//! [`read_all`]. Shared with the compaction and group tests' support module.

use kafko_core::{FetchedRecords, Kafko, KafkoError, Offsets, Record};

/// The partition's log start and high watermark.
pub fn offsets(k: &Kafko, topic: &str, partition: u32) -> Offsets {
    k.topic(topic)
        .map_err(KafkoError::from)
        .and_then(|t| Ok(t.partition(partition)?.offsets()?))
        .unwrap()
}

/// One read of the partition at `offset`.
pub fn read(
    k: &Kafko,
    (topic, partition): (&str, u32),
    offset: u64,
    max_records: usize,
    max_bytes: usize,
) -> FetchedRecords {
    try_read(k, (topic, partition), offset, max_records, max_bytes).unwrap()
}

/// One read of the partition at `offset`, or why it failed.
pub fn try_read(
    k: &Kafko,
    (topic, partition): (&str, u32),
    offset: u64,
    max_records: usize,
    max_bytes: usize,
) -> kafko_core::Result<FetchedRecords> {
    k.topic(topic).map_err(KafkoError::from).and_then(|t| {
        Ok(t.partition(partition)?
            .read(offset, max_records, max_bytes)?)
    })
}

/// Every record of the partition, from the log start to the high watermark.
pub fn read_all(k: &Kafko, topic: &str, partition: u32) -> Vec<Record> {
    let Offsets {
        log_start,
        high_watermark,
        ..
    } = offsets(k, topic, partition);
    let mut out = Vec::new();
    let mut at = log_start;
    while at < high_watermark {
        let f = read(k, (topic, partition), at, 1000, 1 << 20);
        assert!(f.next_offset > at, "read made no progress at {at}");
        at = f.next_offset;
        out.extend(f.records);
    }
    out
}
