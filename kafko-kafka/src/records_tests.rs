//! The record-batch codec's tests: round trips, the limits checked before a batch is
//! inflated, and damaged batches.

use super::*;
use bytes::BytesMut;
use kafko_core::Record;

fn budget(inflate: usize) -> Budget {
    Budget {
        inflate,
        records: 1_000_000,
        max_record_bytes: 1 << 20,
    }
}

fn all(batch: &DecodedBatch) -> Vec<DecodedRecord> {
    batch.records().collect::<Result<_, _>>().unwrap()
}

/// `plain`'s record area gzipped (attributes codec 1), the header fixed up.
fn gzipped(plain: &[u8]) -> Bytes {
    use std::io::Write;
    let area = &plain[BATCH_HEADER_LEN..];
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(area).unwrap();
    let gz = gz.finish().unwrap();
    let mut batch = BytesMut::from(&plain[..BATCH_HEADER_LEN]);
    batch[21..23].copy_from_slice(&1i16.to_be_bytes());
    batch.extend_from_slice(&gz);
    let length = i32::try_from(batch.len() - 12).unwrap();
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    let crc = crc32c::crc32c(&batch[CRC_START..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch.freeze()
}

fn record(offset: u64, key: Option<&str>, value: Option<&str>, headers: &[(&str, &str)]) -> Record {
    Record {
        partition: 0,
        offset,
        timestamp: 1_700_000_000_000 + i64::try_from(offset).unwrap(),
        key: key.map(|k| Bytes::from(k.to_owned())),
        value: value.map(|v| Bytes::from(v.to_owned())),
        headers: headers
            .iter()
            .map(|(n, v)| Header::new(*n, Bytes::from(v.to_string())))
            .collect(),
    }
}

#[test]
fn a_batch_round_trips_with_duplicate_headers_null_key_and_tombstone() {
    let records = vec![
        record(5, None, Some("v"), &[("h", "1"), ("h", "2")]),
        record(6, Some("k"), None, &[]),
        record(8, Some("k2"), Some(""), &[("a", "")]),
    ];
    let mut out = BytesMut::new();
    encode_batch(&records, &mut out, None);
    let batches = decode_batches(out.freeze(), &mut budget(1 << 20)).unwrap();
    assert_eq!(batches.len(), 1);
    let got = &all(&batches[0]);
    assert_eq!(got.len(), 3);
    for (g, r) in got.iter().zip(&records) {
        assert_eq!(g.key, r.key);
        assert_eq!(g.value, r.value);
        assert_eq!(g.headers, r.headers);
        assert_eq!(g.timestamp, r.timestamp);
    }
}

#[test]
fn a_limit_cuts_the_batch_before_the_record_that_does_not_fit() {
    let records: Vec<Record> = (0..5)
        .map(|i| record(i, None, Some("0123456789"), &[]))
        .collect();
    let mut whole = BytesMut::new();
    assert_eq!(encode_batch(&records, &mut whole, None), 5);
    let mut cut = BytesMut::new();
    assert_eq!(encode_batch(&records, &mut cut, Some(whole.len() - 1)), 4);
    let batches = decode_batches(cut.freeze(), &mut budget(1 << 20)).unwrap();
    assert_eq!(all(&batches[0]).len(), 4);
    let mut none = BytesMut::new();
    assert_eq!(encode_batch(&records, &mut none, Some(70)), 0);
    assert!(none.is_empty());
}

#[test]
fn a_flipped_bit_fails_the_crc() {
    let mut out = BytesMut::new();
    encode_batch(&[record(0, Some("k"), Some("value"), &[])], &mut out, None);
    let last = out.len() - 1;
    out[last] ^= 1;
    assert!(matches!(
        decode_batches(out.freeze(), &mut budget(1 << 20)),
        Err(BatchError::Corrupt(_))
    ));
}

#[test]
fn varlongs_round_trip_at_the_edges() {
    for v in [
        0,
        1,
        -1,
        63,
        -64,
        64,
        i64::from(i32::MAX),
        i64::MIN,
        i64::MAX,
    ] {
        let mut out = BytesMut::new();
        put_varlong(&mut out, v);
        let mut r = Reader { buf: out.freeze() };
        assert_eq!(r.varlong().unwrap(), v);
    }
}

#[test]
fn compressed_batches_share_one_inflate_budget() {
    let records: Vec<Record> = (0..100)
        .map(|i| record(i, None, Some(&"x".repeat(1000)), &[]))
        .collect();
    let mut plain = BytesMut::new();
    encode_batch(&records, &mut plain, None);
    let area = plain.len() - BATCH_HEADER_LEN;
    let batch = gzipped(&plain);
    let mut left = budget(area * 3 / 2);
    let decoded = decode_batches(batch.clone(), &mut left).unwrap();
    assert_eq!(all(&decoded[0]).len(), 100);
    assert_eq!(left.inflate, area / 2);
    assert_eq!(left.records, 1_000_000 - 100);
    assert!(matches!(
        decode_batches(batch, &mut left),
        Err(BatchError::TooLarge(_))
    ));
}

#[test]
fn the_count_is_checked_before_the_area_is_inflated() {
    let records: Vec<Record> = (0..100).map(|i| record(i, None, None, &[])).collect();
    let mut plain = BytesMut::new();
    encode_batch(&records, &mut plain, None);
    let mut left = Budget {
        records: 99,
        ..budget(0)
    };
    // No inflate budget at all: the count alone refuses the batch.
    assert!(matches!(
        decode_batches(gzipped(&plain), &mut left),
        Err(BatchError::TooManyRecords(99))
    ));
    let mut left = Budget {
        records: 150,
        ..budget(1 << 20)
    };
    decode_batches(plain.clone().freeze(), &mut left).unwrap();
    assert_eq!(left.records, 50);
    assert!(matches!(
        decode_batches(plain.freeze(), &mut left),
        Err(BatchError::TooManyRecords(50))
    ));
}

#[test]
fn a_lying_count_inflates_no_more_than_its_records_can_take() {
    // One record of 4 KiB, in a batch whose area inflates to 1 MiB of zeros.
    let mut plain = BytesMut::new();
    encode_batch(
        &[record(0, None, Some(&"v".repeat(4096)), &[])],
        &mut plain,
        None,
    );
    plain.resize(BATCH_HEADER_LEN + (1 << 20), 0);
    let mut left = Budget {
        max_record_bytes: 8 * 1024,
        ..budget(16 << 20)
    };
    assert!(matches!(
        decode_batches(gzipped(&plain), &mut left),
        Err(BatchError::TooLarge(_))
    ));
    assert_eq!(left.inflate, 16 << 20, "nothing inflated was kept");
}

#[test]
fn a_record_past_the_largest_size_is_refused_before_its_headers_are_read() {
    let headers: Vec<(&str, &str)> = vec![("", ""); 3000];
    let mut out = BytesMut::new();
    encode_batch(&[record(0, None, None, &headers)], &mut out, None);
    let mut left = Budget {
        max_record_bytes: 1000,
        ..budget(1 << 20)
    };
    let batch = decode_batches(out.freeze(), &mut left).unwrap();
    let mut records = batch[0].records();
    assert!(matches!(records.next(), Some(Err(BatchError::TooLarge(_)))));
    assert!(records.next().is_none());
}

#[test]
fn bytes_after_the_counted_records_end_the_walk_with_an_error() {
    let records: Vec<Record> = (0..3).map(|i| record(i, None, None, &[])).collect();
    let mut out = BytesMut::new();
    encode_batch(&records, &mut out, None);
    // Declare 2 records of the 3.
    out[57..61].copy_from_slice(&2i32.to_be_bytes());
    let crc = crc32c::crc32c(&out[CRC_START..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    let batch = decode_batches(out.freeze(), &mut budget(1 << 20)).unwrap();
    let walked: Vec<_> = batch[0].records().collect();
    assert_eq!(walked.len(), 3);
    assert!(matches!(walked[2], Err(BatchError::Corrupt(_))));
}
