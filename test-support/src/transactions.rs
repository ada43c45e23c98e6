//! Transactional producers' batches written straight through kafko-core, with the
//! markers that decide them: for tests that need open, committed and aborted
//! transactions in a log without a transaction coordinator.

use kafko_core::{
    BatchBudget, Bytes, ProduceError, ProducedBatch, Producer, SendOptions, TopicHandle,
};

/// The producer fields of a batch: id, epoch, base sequence.
pub type ProducerFields = (i64, i16, i32);

/// A Kafka record batch (magic 2, uncompressed) of `records` (key, value) with
/// timestamp `timestamp`, of `producer` (or none), transactional or not, checked as a
/// Produce checks it.
pub fn batch(
    records: &[(&[u8], &[u8])],
    producer: Option<ProducerFields>,
    transactional: bool,
    timestamp: i64,
) -> ProducedBatch {
    let mut area = Vec::new();
    for (i, (key, value)) in records.iter().enumerate() {
        let mut rec = Vec::new();
        rec.push(0u8);
        varint(&mut rec, 0);
        varint(&mut rec, i as i64);
        varint(&mut rec, key.len() as i64);
        rec.extend_from_slice(key);
        varint(&mut rec, value.len() as i64);
        rec.extend_from_slice(value);
        varint(&mut rec, 0);
        varint(&mut area, rec.len() as i64);
        area.extend_from_slice(&rec);
    }
    let (id, epoch, sequence) = producer.unwrap_or((-1, -1, -1));
    let attributes: i16 = if transactional { 0x10 } else { 0 };
    let mut b = Vec::new();
    b.extend_from_slice(&0i64.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes());
    b.extend_from_slice(&(-1i32).to_be_bytes());
    b.push(2);
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&attributes.to_be_bytes());
    b.extend_from_slice(&(records.len() as i32 - 1).to_be_bytes());
    b.extend_from_slice(&timestamp.to_be_bytes());
    b.extend_from_slice(&timestamp.to_be_bytes());
    b.extend_from_slice(&id.to_be_bytes());
    b.extend_from_slice(&epoch.to_be_bytes());
    b.extend_from_slice(&sequence.to_be_bytes());
    b.extend_from_slice(&(records.len() as i32).to_be_bytes());
    b.extend_from_slice(&area);
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    let mut budget = BatchBudget {
        inflate: 1 << 24,
        records: 1 << 20,
        max_record_bytes: 1 << 20,
    };
    ProducedBatch::check(Bytes::from(b), &mut budget).expect("a well-formed batch")
}

fn varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Appends transactional records of `producer` to `partition` (its coordinator said
/// yes); the base offset.
pub async fn append_txn(
    p: &Producer,
    partition: u32,
    records: &[(&[u8], &[u8])],
    producer: ProducerFields,
    timestamp: i64,
) -> Result<u64, ProduceError> {
    let batch = batch(records, Some(producer), true, timestamp);
    let appended = p
        .append_transactional(partition, batch, SendOptions::default(), || Ok(()))
        .await?;
    Ok(appended.append.base_offset)
}

/// Appends records outside any transaction (no producer id); the base offset.
pub async fn append_plain(
    p: &Producer,
    partition: u32,
    records: &[(&[u8], &[u8])],
    timestamp: i64,
) -> u64 {
    let batch = batch(records, None, false, timestamp);
    p.append_batch(partition, batch, SendOptions::default())
        .await
        .expect("append")
        .append
        .base_offset
}

/// Ends `producer_id`'s transaction in `partition` with a marker (COMMIT or ABORT) at
/// `epoch`; the marker's offset.
pub async fn end_txn(
    t: &TopicHandle,
    partition: u32,
    producer_id: i64,
    epoch: i16,
    commit: bool,
) -> Result<u64, ProduceError> {
    t.append_transaction_marker(partition, producer_id, epoch, commit)
        .await
}
