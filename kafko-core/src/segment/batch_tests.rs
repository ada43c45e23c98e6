use super::*;
use proptest::prelude::*;

/// (key, value, headers, timestamp) of a generated record.
type ArbRecord = (
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Vec<u8>)>,
    i64,
);

fn arb_record() -> impl Strategy<Value = ArbRecord> {
    (
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300)),
        proptest::collection::vec(
            ("[a-z]{0,8}", proptest::collection::vec(any::<u8>(), 0..20)),
            0..3,
        ),
        any::<i64>(),
    )
}

fn one(value: &[u8]) -> EncodedBatch {
    encode(
        Compression::None,
        std::iter::once(RecordFields {
            offset_delta: 0,
            timestamp: 7,
            key: Some(b"k"),
            value: Some(value),
            headers: &[],
        }),
    )
    .unwrap()
}

proptest! {
    #[test]
    fn batches_round_trip_for_every_codec(
        recs in proptest::collection::vec(arb_record(), 1..20),
        base in 0u64..i64::MAX as u64 - 64,
        codec in prop_oneof![Just(Compression::None), Just(Compression::Lz4), Just(Compression::Zstd)],
    ) {
        let headers: Vec<Vec<Header>> = recs.iter()
            .map(|r| r.2.iter().map(|(n, v)| Header::new(n.clone(), v.clone())).collect())
            .collect();
        let batch = encode(codec, recs.iter().zip(&headers).enumerate().map(|(i, (r, h))| RecordFields {
            offset_delta: i as u32,
            timestamp: r.3,
            key: r.0.as_deref(),
            value: r.1.as_deref(),
            headers: h,
        })).unwrap();
        let mut out = Vec::new();
        frame(&mut out, base, &batch);
        let header = BatchHeader::parse(&out, Format::V2).unwrap();
        prop_assert!(crc_matches(&header, &out));
        prop_assert_eq!(header.framed_len(), out.len());
        prop_assert_eq!(header.base_offset, base);
        prop_assert_eq!(header.producer, ProducerFields::NONE);
        let mut decoded = Vec::new();
        decode_records(&header, Bytes::from(out), 3, &mut decoded).unwrap();
        prop_assert_eq!(decoded.len(), recs.len());
        for (i, (d, r)) in decoded.iter().zip(&recs).enumerate() {
            prop_assert_eq!(d.offset, base + i as u64);
            prop_assert_eq!(d.timestamp, r.3);
            prop_assert_eq!(d.key.as_deref(), r.0.as_deref());
            prop_assert_eq!(d.value.as_deref(), r.1.as_deref());
            prop_assert_eq!(&d.headers, &headers[i]);
        }
    }

    /// Every bit of a batch is verified: by the CRC-32C from the attributes on, by the
    /// header's own checks for the length, leader epoch and magic. The base offset is
    /// verified by where the batch stands (recovery's contiguity rule), so a flip there
    /// changes the offset the header reports.
    #[test]
    fn any_single_bit_flip_is_detected(flip in 0usize..3000) {
        let mut out = Vec::new();
        frame(&mut out, 10, &one(&[9u8; 300]));
        let bit = flip % (out.len() * 8);
        out[bit / 8] ^= 1 << (bit % 8);
        match BatchHeader::parse(&out, Format::V2) {
            Err(_) => {}
            Ok(h) if bit / 8 < 8 => prop_assert_ne!(h.base_offset, 10),
            Ok(h) => prop_assert!(!crc_matches(&h, &out), "bit {bit} went unnoticed"),
        }
    }

    #[test]
    fn computed_varint_lengths_match_the_encoder(i in any::<i64>()) {
        let mut out = Vec::new();
        put_varint(&mut out, i);
        prop_assert_eq!(out.len(), varint_len(i));
    }
}

/// The layout is Kafka's: a Kafka client's view of the header fields.
#[test]
fn the_header_is_kafkas_record_batch() {
    let mut out = Vec::new();
    frame(&mut out, 0x0102_0304_0506, &one(b"value"));
    assert_eq!(&out[0..8], &0x0102_0304_0506i64.to_be_bytes());
    assert_eq!(
        i32::from_be_bytes(out[8..12].try_into().unwrap()) as usize,
        out.len() - 12
    );
    assert_eq!(&out[12..16], &[0, 0, 0, 0], "leader epoch");
    assert_eq!(out[16], 2, "magic");
    let crc = u32::from_be_bytes(out[17..21].try_into().unwrap());
    assert_eq!(crc, crc32c::crc32c(&out[21..]));
    assert_eq!(&out[21..23], &[0, 0], "attributes");
    assert_eq!(&out[43..51], &(-1i64).to_be_bytes(), "producer id");
    assert_eq!(&out[57..61], &1i32.to_be_bytes(), "record count");
    // The record: its length 12 (zig-zag 24), attributes, timestamp delta 0, offset
    // delta 0, key "k" (length 1, zig-zag 2), value "value" (10), no headers.
    assert_eq!(
        &out[61..],
        &[24, 0, 0, 0, 2, b'k', 10, b'v', b'a', b'l', b'u', b'e', 0]
    );
}

#[test]
fn the_append_bit_is_kept_and_covered_by_the_crc() {
    let mut encoder = BatchEncoder::with_capacity(16);
    encoder.push(&RecordFields {
        offset_delta: 0,
        timestamp: 1,
        key: None,
        value: Some(b"v"),
        headers: &[],
    });
    let batch = encoder.finish(Compression::Zstd, true).unwrap();
    let mut out = Vec::new();
    frame(&mut out, 5, &batch);
    let header = BatchHeader::parse(&out, Format::V2).unwrap();
    assert!(header.continued);
    assert!(crc_matches(&header, &out));
    assert_eq!(header.codec, Compression::Zstd);
    out[22] &= !0x40; // clearing the append bit (0x4000) alone fails the CRC
    out[21] &= !0x40;
    let cleared = BatchHeader::parse(&out, Format::V2).unwrap();
    assert!(!cleared.continued);
    assert!(!crc_matches(&cleared, &out));
}

#[test]
fn empty_compaction_batches_round_trip_but_need_an_empty_area() {
    let producer = ProducerFields {
        id: 7,
        epoch: 2,
        base_sequence: 40,
    };
    let mut out = Vec::new();
    frame(&mut out, 100, &empty(9, 5, 7, producer));
    let header = BatchHeader::parse(&out, Format::V2).unwrap();
    assert!(crc_matches(&header, &out));
    assert_eq!((header.record_count, header.next_offset()), (0, 110));
    assert_eq!(header.producer, producer);
    let mut decoded = Vec::new();
    decode_records(&header, Bytes::from(out.clone()), 0, &mut decoded).unwrap();
    assert!(decoded.is_empty());
    let mut longer = out.clone();
    longer.push(0);
    longer[8..12].copy_from_slice(&50i32.to_be_bytes());
    assert!(BatchHeader::parse(&longer, Format::V2).is_err());
}

#[test]
fn null_header_values_read_as_empty_and_log_append_time_applies() {
    // A Kafka producer's record with a null header value, in a batch with
    // LogAppendTime: built by hand, as a producer sends it.
    let mut area = Vec::new();
    let mut body = vec![0u8];
    put_varint(&mut body, 0); // timestamp delta
    put_varint(&mut body, 0); // offset delta
    put_varint(&mut body, -1); // null key
    put_varint(&mut body, 1);
    body.push(b'v');
    put_varint(&mut body, 1); // one header
    put_varint(&mut body, 1);
    body.push(b'h');
    put_varint(&mut body, -1); // null value
    put_varint(&mut area, body.len() as i64);
    area.extend_from_slice(&body);
    let mut bytes = vec![0u8; HEADER_LEN];
    bytes.extend_from_slice(&area);
    write_header(
        &mut bytes,
        &HeaderFields {
            attributes: ATTR_LOG_APPEND_TIME,
            last_offset_delta: 0,
            base_timestamp: 1,
            max_timestamp: 99,
            producer: ProducerFields::NONE,
            record_count: 1,
        },
    );
    let header = BatchHeader::parse(&bytes, Format::V2).unwrap();
    let mut decoded = Vec::new();
    decode_records(&header, Bytes::from(bytes), 0, &mut decoded).unwrap();
    assert_eq!(decoded[0].timestamp, 99);
    assert_eq!(decoded[0].key, None);
    assert_eq!(decoded[0].headers, vec![Header::new("h", Vec::new())]);
}

/// Found by `cargo fuzz run batch` on format 1, kept for format 2: a header whose
/// `base_offset + last_offset_delta` runs past the largest offset is corrupt.
#[test]
fn offset_ranges_past_the_largest_offset_are_corrupt() {
    let one = one(b"v");
    let next_offset_at = |base: u64| {
        let mut out = Vec::new();
        frame(&mut out, base, &one);
        BatchHeader::parse(&out, Format::V2).map(|h| h.next_offset())
    };
    let largest = i64::MAX as u64;
    assert_eq!(next_offset_at(largest - 1), Ok(largest));
    assert!(matches!(
        next_offset_at(largest),
        Err(HeaderError::Invalid(_))
    ));
    assert!(matches!(
        next_offset_at(u64::MAX),
        Err(HeaderError::Invalid(_))
    ));
}

#[test]
fn zero_bytes_mean_end_of_log() {
    assert_eq!(
        BatchHeader::parse(&[0u8; 61], Format::V2),
        Err(HeaderError::EndOfLog)
    );
    assert_eq!(
        BatchHeader::parse(&[1u8; 10], Format::V2),
        Err(HeaderError::Short)
    );
}

#[test]
fn the_batch_checksum_is_crc32c_at_every_length() {
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    // Every length around the fold widths, from unaligned starts, against another
    // implementation.
    let data: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
    for start in [0, 1, 3, 7] {
        for len in (0..600).chain([1023, 1024, 1025, 4095, 4096, 4097, 4993]) {
            let bytes = &data[start..(start + len).min(data.len())];
            assert_eq!(
                crc32c(bytes),
                crc32c::crc32c(bytes),
                "from {start}, {len} bytes"
            );
        }
    }
}
