//! A crash at each step of the compaction swap recovers to either the old or the new
//! segment set — never a temp file loaded as live, never an offset range twice. Each
//! step's on-disk state is rebuilt by hand from a real "before" and "after" directory:
//!
//! 1. `.cleaned` partly written, 2. `.cleaned` complete (before the commit rename),
//! 3. `.swap` with every old segment present, 4. `.swap` with some old files deleted,
//! 5. `.swap` with all old segments deleted, 6. renamed to `.log` before its indexes.
mod common;
mod gc_support;

use std::path::{Path, PathBuf};

use common::on_disk::copy_dir;
use gc_support::{compacted, keyed, open, read_all, seal_marker, send, send_keyed_and_seal};

type Rec = (u64, Option<Vec<u8>>, Option<Vec<u8>>);

async fn records(dir: &Path) -> Vec<Rec> {
    let k = open(dir).await;
    let out = read_all(&k, "t", 0)
        .into_iter()
        .map(|r| {
            (
                r.offset,
                r.key.map(|b| b.to_vec()),
                r.value.map(|b| b.to_vec()),
            )
        })
        .collect();
    k.shutdown().await.unwrap();
    out
}

fn partition_dir(root: &Path) -> PathBuf {
    root.join("topics/t/0")
}

fn segment_bases(root: &Path) -> Vec<u64> {
    let mut bases: Vec<u64> = std::fs::read_dir(partition_dir(root))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log").map(|s| s.parse().unwrap())
        })
        .collect();
    bases.sort_unstable();
    bases
}

fn file(root: &Path, base: u64, ext: &str) -> PathBuf {
    partition_dir(root).join(format!("{base:020}.{ext}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_every_step_of_the_swap_recovers() {
    let work = tempfile::tempdir().unwrap();
    let before = work.path().join("before");
    let after = work.path().join("after");

    // "before": a log cleaned once (many small segments), then more updates sealed.
    let k = open(&before).await;
    k.create_topic_with_config("t", compacted(1)).await.unwrap();
    for i in 0..300u32 {
        let value = (i % 11 != 0).then(|| format!("{i:0>90}"));
        send(&k, "t", keyed(&format!("k{}", i % 7), value.as_deref())).await;
    }
    send(&k, "t", seal_marker()).await;
    k.compact_now("t").await.unwrap();
    send_keyed_and_seal(&k, "t", (40, 3), |i| format!("new{i:0>90}")).await;
    k.shutdown().await.unwrap();
    drop(k);

    // "after": the same directory after one more pass, which merges and removes.
    copy_dir(&before, &after);
    let k = open(&after).await;
    let o = k.compact_now("t").await.unwrap();
    assert!(o.records_removed > 0 && o.segments_replaced > o.segments_written);
    k.shutdown().await.unwrap();
    drop(k);

    let old_bases = segment_bases(&before);
    let new_bases = segment_bases(&after);
    // The first cleaned segment that replaced several old ones is the swap we replay.
    let (b0, end) = new_bases
        .windows(2)
        .map(|w| (w[0], w[1]))
        .find(|&(b, e)| old_bases.iter().filter(|&&o| o >= b && o < e).count() >= 2)
        .expect("no merged segment");
    let replaced: Vec<u64> = old_bases
        .iter()
        .copied()
        .filter(|&o| o >= b0 && o < end)
        .collect();
    let cleaned = std::fs::read(file(&after, b0, "log")).unwrap();

    let old_records = records(&copy_of(&before, work.path(), "ref-old")).await;
    let new_records = records(&copy_of(&after, work.path(), "ref-new")).await;
    let in_range = |r: &&Rec| r.0 >= b0 && r.0 < end;
    let mut swapped: Vec<Rec> = old_records
        .iter()
        .filter(|r| !in_range(r))
        .cloned()
        .collect();
    swapped.extend(new_records.iter().filter(in_range).cloned());
    swapped.sort();
    assert_ne!(
        swapped, old_records,
        "the replayed swap must change something"
    );

    type Setup = Box<dyn Fn(&Path)>;
    let (c1, c2, c3, c4, c5, c6) = (
        cleaned.clone(),
        cleaned.clone(),
        cleaned.clone(),
        cleaned.clone(),
        cleaned.clone(),
        cleaned.clone(),
    );
    let (r4, r5, r6) = (replaced.clone(), replaced.clone(), replaced.clone());
    let remove_old = |root: &Path, bases: &[u64]| {
        for &b in bases {
            for ext in ["log", "index", "timeindex"] {
                let _ = std::fs::remove_file(file(root, b, ext));
            }
        }
    };
    let steps: Vec<(&str, Setup, bool)> = vec![
        (
            "cleaned file half written",
            Box::new(move |root| {
                std::fs::write(file(root, b0, "cleaned"), &c1[..c1.len() / 2]).unwrap()
            }),
            false,
        ),
        (
            "cleaned file complete, not renamed",
            Box::new(move |root| std::fs::write(file(root, b0, "cleaned"), &c2).unwrap()),
            false,
        ),
        (
            "swap renamed, old segments present",
            Box::new(move |root| std::fs::write(file(root, b0, "swap"), &c3).unwrap()),
            true,
        ),
        (
            "swap renamed, first old segment deleted",
            Box::new(move |root| {
                std::fs::write(file(root, b0, "swap"), &c4).unwrap();
                remove_old(root, &r4[..1]);
            }),
            true,
        ),
        (
            "swap renamed, every old segment deleted",
            Box::new(move |root| {
                std::fs::write(file(root, b0, "swap"), &c5).unwrap();
                remove_old(root, &r5);
            }),
            true,
        ),
        (
            "renamed to .log, indexes not yet written",
            Box::new(move |root| {
                remove_old(root, &r6);
                std::fs::write(file(root, b0, "log"), &c6).unwrap();
            }),
            true,
        ),
    ];
    for (i, (name, setup, committed)) in steps.iter().enumerate() {
        let root = copy_of(&before, work.path(), &format!("step-{i}"));
        // A crash leaves no clean-shutdown marker.
        let _ = std::fs::remove_file(root.join("clean-shutdown"));
        setup(&root);
        let expected = if *committed { &swapped } else { &old_records };
        let got = records(&root).await;
        assert_eq!(&got, expected, "step '{name}' recovered the wrong records");
        let leftovers: Vec<String> = std::fs::read_dir(partition_dir(&root))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".swap") || n.ends_with(".cleaned"))
            .collect();
        assert!(leftovers.is_empty(), "step '{name}' left {leftovers:?}");
        let bases = segment_bases(&root);
        if *committed {
            assert!(bases.contains(&b0));
            assert!(
                !bases.iter().any(|&b| b > b0 && b < end),
                "step '{name}': old segment kept"
            );
        } else {
            assert!(replaced.iter().all(|b| bases.contains(b)));
        }
        // The log stays writable at the right offset, and a clean reopen agrees.
        let k = open(&root).await;
        let hw = common::offsets(&k, "t", 0).high_watermark;
        assert_eq!(send(&k, "t", keyed("k0", Some("after crash"))).await, hw);
        k.shutdown().await.unwrap();
        drop(k);
        let again = records(&root).await;
        assert_eq!(
            &again[..again.len() - 1],
            &expected[..],
            "step '{name}' changed on reopen"
        );
    }
}

fn copy_of(from: &Path, work: &Path, name: &str) -> PathBuf {
    let to = work.join(name);
    copy_dir(from, &to);
    to
}
