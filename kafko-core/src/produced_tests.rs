//! The producer-batch check: what it accepts, the limits checked before a batch is
//! inflated, damaged and out-of-order batches, and what the log stores.

use super::*;
use crate::record::{Header, Record};
use crate::segment::batch::{BatchHeader, Format, RecordFields, decode_records, encode};

fn budget(inflate: usize) -> BatchBudget {
    BatchBudget {
        inflate,
        records: 1_000_000,
        max_record_bytes: 1 << 20,
    }
}

/// A producer's batch of `values` (keys `k`, one header each), codec `codec`, as a
/// producer sends it: base offset 0, leader epoch −1.
fn produced(values: &[Option<&[u8]>], codec: Compression) -> Vec<u8> {
    let headers = [Header::new("h", "1"), Header::new("h", "2")];
    let fields = values.iter().enumerate().map(|(i, v)| RecordFields {
        offset_delta: i as u32,
        timestamp: 1_000 + i as i64,
        key: (i % 2 == 0).then_some(&b"k"[..]),
        value: *v,
        headers: &headers,
    });
    let mut bytes = encode(codec, fields).unwrap().bytes;
    bytes[12..16].copy_from_slice(&(-1i32).to_be_bytes());
    bytes
}

fn recrc(bytes: &mut [u8]) {
    let crc = crc32c::crc32c(&bytes[CRC_START..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
}

fn check(bytes: Vec<u8>) -> Result<ProducedBatch, BatchError> {
    ProducedBatch::check(Bytes::from(bytes), &mut budget(1 << 20))
}

fn stored_records(stored: &EncodedBatch) -> Vec<Record> {
    let header = BatchHeader::parse(&stored.bytes, Format::V2).unwrap();
    assert!(batch::crc_matches(&header, &stored.bytes));
    let mut out = Vec::new();
    decode_records(&header, Bytes::from(stored.bytes.clone()), 0, &mut out).unwrap();
    out
}

#[test]
fn a_batch_is_stored_as_sent_with_its_leader_epoch_set() {
    let sent = produced(&[Some(b"v"), None, Some(b"")], Compression::Zstd);
    let batch = check(sent.clone()).unwrap();
    assert_eq!(
        (batch.record_count(), batch.codec()),
        (3, Compression::Zstd)
    );
    assert!(!batch.is_idempotent());
    let stored = batch.into_stored(Compression::Producer, 5).unwrap();
    assert_eq!(&stored.bytes[..12], &sent[..12]);
    assert_eq!(&stored.bytes[12..16], &[0, 0, 0, 0]);
    assert_eq!(&stored.bytes[16..], &sent[16..], "the rest as sent");
    let records = stored_records(&stored);
    assert_eq!(records.len(), 3);
    assert_eq!(records[1].key, None);
    assert_eq!(records[1].value, None);
    assert_eq!(records[2].value.as_deref(), Some(&b""[..]));
    assert_eq!(records[0].headers.len(), 2, "duplicate header names kept");
}

#[test]
fn a_topic_codec_other_than_the_batchs_re_encodes_it() {
    let sent = produced(&[Some(b"v1"), Some(b"v2")], Compression::Zstd);
    for topic in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
    ] {
        let stored = check(sent.clone()).unwrap().into_stored(topic, 5).unwrap();
        let header = BatchHeader::parse(&stored.bytes, Format::V2).unwrap();
        assert_eq!(header.codec, topic);
        let values: Vec<_> = stored_records(&stored)
            .into_iter()
            .map(|r| r.value.unwrap())
            .collect();
        assert_eq!(values, [&b"v1"[..], &b"v2"[..]]);
    }
}

#[test]
fn log_append_time_and_a_wrong_newest_timestamp_are_set_by_the_log() {
    let mut sent = produced(&[Some(b"v1"), Some(b"v2")], Compression::None);
    sent[35..43].copy_from_slice(&99i64.to_be_bytes()); // the records say 1001
    recrc(&mut sent);
    let stored = check(sent.clone())
        .unwrap()
        .into_stored(Compression::Producer, 7)
        .unwrap();
    assert_eq!(stored.max_timestamp, 1_001);
    assert_eq!(&stored.bytes[35..43], &1_001i64.to_be_bytes());
    sent[22] |= 0x08; // log-append time
    recrc(&mut sent);
    let stored = check(sent)
        .unwrap()
        .into_stored(Compression::Producer, 7_000)
        .unwrap();
    assert!(stored_records(&stored).iter().all(|r| r.timestamp == 7_000));
}

#[test]
fn damaged_or_foreign_batches_are_refused_by_kind() {
    let sent = produced(&[Some(b"value")], Compression::None);
    let mut flipped = sent.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(matches!(check(flipped), Err(BatchError::Corrupt(_))));
    let mut magic = sent.clone();
    magic[16] = 1;
    assert_eq!(check(magic).unwrap_err(), BatchError::Magic(1));
    let mut codec = sent.clone();
    codec[22] = 5;
    recrc(&mut codec);
    assert_eq!(check(codec).unwrap_err(), BatchError::Codec(5));
    let mut appends = sent.clone();
    appends[21] = 0x40; // kafko's own append bit
    recrc(&mut appends);
    assert!(matches!(check(appends), Err(BatchError::Invalid(_))));
    let two = [sent.clone(), sent.clone()].concat();
    assert!(matches!(check(two), Err(BatchError::Invalid(_))));
    assert!(matches!(
        check(sent[..40].to_vec()),
        Err(BatchError::Corrupt(_))
    ));
}

#[test]
fn offsets_must_run_0_1_2_as_the_header_says() {
    let mut sent = produced(&[Some(b"a"), Some(b"b"), Some(b"c")], Compression::None);
    sent[57..61].copy_from_slice(&2i32.to_be_bytes()); // 2 records, last delta 2
    recrc(&mut sent);
    assert!(matches!(check(sent.clone()), Err(BatchError::Invalid(_))));
    sent[23..27].copy_from_slice(&1i32.to_be_bytes()); // 2 records, last delta 1: a third follows
    recrc(&mut sent);
    assert!(matches!(check(sent), Err(BatchError::Corrupt(_))));
}

#[test]
fn compressed_batches_share_one_inflate_budget() {
    let value = vec![b'x'; 1000];
    let values: Vec<Option<&[u8]>> = (0..100).map(|_| Some(&value[..])).collect();
    let plain = produced(&values, Compression::None);
    let area = plain.len() - HEADER_LEN;
    let gzipped = Bytes::from(produced(&values, Compression::Gzip));
    let mut left = budget(area * 3 / 2);
    ProducedBatch::check(gzipped.clone(), &mut left).unwrap();
    assert_eq!((left.inflate, left.records), (area / 2, 1_000_000 - 100));
    assert!(matches!(
        ProducedBatch::check(gzipped, &mut left),
        Err(BatchError::TooLarge(_))
    ));
}

#[test]
fn the_count_is_checked_before_the_area_is_inflated() {
    let values: Vec<Option<&[u8]>> = vec![None; 100];
    let mut left = BatchBudget {
        records: 99,
        ..budget(0)
    };
    let gzipped = Bytes::from(produced(&values, Compression::Gzip));
    assert_eq!(
        ProducedBatch::check(gzipped, &mut left).unwrap_err(),
        BatchError::TooManyRecords(99)
    );
}

#[test]
fn a_record_past_the_largest_size_is_refused_before_its_headers_are_read() {
    let big = vec![b'v'; 4096];
    let sent = Bytes::from(produced(&[Some(&big)], Compression::None));
    let mut left = BatchBudget {
        max_record_bytes: 1000,
        ..budget(1 << 20)
    };
    assert!(matches!(
        ProducedBatch::check(sent.clone(), &mut left),
        Err(BatchError::TooLarge(_))
    ));
    // A lying area: 1 MiB of zeros behind one record inflates no further than one
    // record of the largest size may take.
    let mut padded = sent.to_vec();
    padded.resize(HEADER_LEN + (1 << 20), 0);
    let area = compression::compress(Compression::Gzip, &padded[HEADER_LEN..]).unwrap();
    padded.truncate(HEADER_LEN);
    padded.extend_from_slice(&area);
    padded[22] = 1;
    let length = (padded.len() - 12) as i32;
    padded[8..12].copy_from_slice(&length.to_be_bytes());
    recrc(&mut padded);
    let mut left = BatchBudget {
        max_record_bytes: 8 * 1024,
        ..budget(16 << 20)
    };
    assert!(matches!(
        ProducedBatch::check(Bytes::from(padded), &mut left),
        Err(BatchError::TooLarge(_))
    ));
    assert_eq!(left.inflate, 16 << 20, "nothing inflated was kept");
}
