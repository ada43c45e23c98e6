//! What a Kafka fetch is given (`PartitionReader::read_batches`): whole stored batches,
//! from the one holding the offset asked, within the byte budget (the first past it
//! when asked to), across segments, below the high watermark; the same bytes however the
//! reads are cut; a damaged batch refused as corruption, not served.
mod common;

use kafko_core::{ErrorKind, Isolation, Kafko, PartitionReader};

/// 30 sends of 10 records each: 30 batches, offsets 10·i..10·i+9, in 4 KiB segments.
async fn filled(dir: &std::path::Path) -> (Kafko, PartitionReader) {
    let (k, p) = common::open_small_topic(dir).await;
    for send in 0..30u64 {
        let records = (0..10).map(|i| common::rec(send * 10 + i)).collect();
        p.send_batch(records).await.unwrap();
    }
    let reader = k.topic("t").unwrap().partition(0).unwrap();
    (k, reader)
}

/// The batches of an answer: (base offset, records, bytes), each whole.
fn batches(mut bytes: &[u8]) -> Vec<(u64, u32, usize)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let base = u64::from_be_bytes(bytes[..8].try_into().unwrap());
        let len =
            12 + usize::try_from(i32::from_be_bytes(bytes[8..12].try_into().unwrap())).unwrap();
        let count = u32::from_be_bytes(bytes[57..61].try_into().unwrap());
        assert!(len <= bytes.len(), "a batch cut short");
        out.push((base, count, len));
        bytes = &bytes[len..];
    }
    out
}

fn contiguous(found: &[(u64, u32, usize)]) -> bool {
    found
        .windows(2)
        .all(|w| w[0].0 + u64::from(w[0].1) == w[1].0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_batches_from_the_one_holding_the_offset_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (k, r) = filled(dir.path()).await;
    assert!(
        common::segments(dir.path(), "t", 0).len() > 3,
        "several segments"
    );

    // Everything, across every segment.
    let all = r
        .read_batches(0, usize::MAX, true, Isolation::ReadUncommitted)
        .unwrap();
    let found = batches(&all.bytes);
    assert_eq!((found.len(), all.records, all.next_offset), (30, 300, 300));
    assert!(contiguous(&found) && found[0].0 == 0);

    // From inside a batch: the whole batch holding it comes first.
    let mid = r
        .read_batches(77, usize::MAX, true, Isolation::ReadUncommitted)
        .unwrap();
    assert_eq!(batches(&mid.bytes)[0].0, 70);
    assert_eq!(mid.next_offset, 300);

    // A budget below one batch: that batch only when asked for at least one.
    let one = batches(&all.bytes)[3].2;
    let small = r
        .read_batches(30, one - 1, true, Isolation::ReadUncommitted)
        .unwrap();
    assert_eq!(batches(&small.bytes), vec![(30, 10, one)]);
    assert_eq!(small.next_offset, 40);
    let none = r
        .read_batches(30, one - 1, false, Isolation::ReadUncommitted)
        .unwrap();
    assert!(none.bytes.is_empty());
    assert_eq!(none.next_offset, 30);

    // Cut in any budget, the reads chain to the same bytes.
    for budget in [one, 3 * one + 7, 4096, 10_000] {
        let mut chained = Vec::new();
        let mut at = 0;
        while at < 300 {
            let part = r
                .read_batches(at, budget, true, Isolation::ReadUncommitted)
                .unwrap();
            let within = part.bytes.len() <= budget || batches(&part.bytes).len() == 1;
            assert!(within, "budget {budget}");
            assert!(part.next_offset > at);
            chained.extend_from_slice(&part.bytes);
            at = part.next_offset;
        }
        assert_eq!(chained, all.bytes.to_vec(), "budget {budget}");
    }
    // At the high watermark: nothing, no error.
    let end = r
        .read_batches(300, 1 << 20, true, Isolation::ReadUncommitted)
        .unwrap();
    assert_eq!((end.bytes.len(), end.next_offset), (0, 300));
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_batch_is_corruption_not_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (k, r) = filled(dir.path()).await;
    let first = &common::segments(dir.path(), "t", 0)[0];
    let mut bytes = std::fs::read(first).unwrap();
    // A byte of the second batch's records.
    let second = batches(&bytes)[0].2;
    bytes[second + 70] ^= 0x55;
    std::fs::write(first, &bytes).unwrap();
    let e = r
        .read_batches(0, usize::MAX, true, Isolation::ReadUncommitted)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.to_string().contains(&format!("{}", second)), "{e}");
    // The batch before it is still served alone.
    let before = r
        .read_batches(0, second, true, Isolation::ReadUncommitted)
        .unwrap();
    assert_eq!(batches(&before.bytes).len(), 1);
    k.shutdown().await.unwrap();
}
