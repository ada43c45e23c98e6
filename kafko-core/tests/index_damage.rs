//! Indexes are caches: deleted, zeroed, truncated or scrambled index files never stop an
//! open and never make a lookup wrong.
mod common;

use kafko_core::Kafko;

/// Damages one index file in place.
type Damage = fn(&std::path::Path);

async fn lookups_are_right(k: &Kafko) {
    for offset in (0..600u64).step_by(37) {
        let f = common::read(k, ("t", 0), offset, 1, 1 << 20);
        assert_eq!(f.records[0].offset, offset);
        assert_eq!(f.records[0].value.as_ref().unwrap(), &common::value(offset));
    }
    for offset in (0..600u64).step_by(53) {
        assert_eq!(
            k.topic("t")
                .map_err(kafko_core::KafkoError::from)
                .and_then(|t| Ok(t
                    .partition(0)?
                    .offset_for_timestamp(1_000_000 + offset as i64)?))
                .unwrap(),
            Some(offset)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_index_damage_is_survived() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_small_topic(dir.path()).await;
    for i in 0..600u64 {
        p.send_record(common::rec(i).with_timestamp(1_000_000 + i as i64))
            .await
            .unwrap();
    }
    lookups_are_right(&k).await;
    k.shutdown().await.unwrap();
    let pdir = dir.path().join("topics/t/0");
    let damages: [(&str, Damage); 4] = [
        ("delete", |p| std::fs::remove_file(p).unwrap()),
        ("zero", |p| {
            let n = std::fs::metadata(p).unwrap().len() as usize;
            std::fs::write(p, vec![0u8; n]).unwrap()
        }),
        ("truncate", |p| {
            let b = std::fs::read(p).unwrap();
            std::fs::write(p, &b[..b.len() / 2]).unwrap()
        }),
        ("scramble", |p| {
            let mut b = std::fs::read(p).unwrap();
            for (i, x) in b.iter_mut().enumerate().skip(44) {
                *x = x.wrapping_mul(31).wrapping_add(i as u8);
            }
            std::fs::write(p, &b).unwrap()
        }),
    ];
    for (name, damage) in damages {
        for entry in std::fs::read_dir(&pdir).unwrap() {
            let path = entry.unwrap().path();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if (ext == "index" || ext == "timeindex") && path.exists() {
                damage(&path);
            }
        }
        let k = Kafko::open(dir.path())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        lookups_are_right(&k).await;
        k.shutdown().await.unwrap();
    }
}
