//! Simulated power loss during topic administration: random creates (with random
//! configurations), config updates and deletes of a handful of names, with the power cut
//! at a random storage operation and the log reopened on the crash image, over several
//! crash/reopen epochs. After each reopen, a name whose last operation was acknowledged
//! is in exactly that state (present with that configuration, or absent); a name whose
//! last operation was cut short is in the state before it or after it — never anything
//! else, and the reopen itself never fails.
//!
//! Default: 200 seeds; `KAFKO_LONG=1`: 2,000; `KAFKO_SIM_SEEDS=n` sets the count.
mod sim;

use std::collections::BTreeMap;
use std::path::Path;

use kafko_core::{Compression, FsyncPolicy, Kafko, TopicConfig, TopicConfigUpdate};
use sim::model::open;
use sim::{Image, Reorder, Rng, SimFs};

const NAMES: [&str; 4] = ["a", "b", "c.d", "e_f"];

/// What a name holds on disk: absent, or a topic with this configuration.
type State = Option<TopicConfig>;

/// Per name: the state every reader must see, and the state an operation in flight at the
/// cut would leave (either is acceptable after the reopen).
#[derive(Default)]
struct Expect {
    settled: BTreeMap<&'static str, State>,
    in_flight: Option<(&'static str, State)>,
}

fn random_config(rng: &mut Rng) -> TopicConfig {
    TopicConfig {
        partitions: 1 + rng.below(2) as u32,
        compression: [Compression::None, Compression::Lz4, Compression::Zstd]
            [rng.below(3) as usize],
        fsync: if rng.chance(1, 2) {
            FsyncPolicy::Always
        } else {
            FsyncPolicy::Never
        },
        retention_ms: Some(1_000 + rng.below(1_000_000)),
        ..Default::default()
    }
}

/// Runs one random admin operation; `true` when it was cut by the power loss.
async fn step(k: &Kafko, fs: &SimFs, rng: &mut Rng, expect: &mut Expect) -> Result<bool, String> {
    let name = NAMES[rng.below(NAMES.len() as u64) as usize];
    let before = expect.settled.get(name).cloned().flatten();
    let after: State = match &before {
        None => Some(random_config(rng)),
        Some(cfg) if rng.chance(1, 2) => Some(TopicConfig {
            retention_ms: Some(1_000 + rng.below(1_000_000)),
            ..cfg.clone()
        }),
        Some(_) => None,
    };
    expect.in_flight = Some((name, after.clone()));
    let result = match (&before, &after) {
        (None, Some(cfg)) => k
            .create_topic_with_config(name, cfg.clone())
            .await
            .map(|_| ()),
        (Some(_), Some(cfg)) => {
            let update = TopicConfigUpdate {
                retention_ms: Some(cfg.retention_ms),
                ..Default::default()
            };
            k.update_topic_config(name, &update).await.map(|_| ())
        }
        (Some(_), None) => k.delete_topic(name).await,
        (None, None) => unreachable!("an absent name is always created"),
    };
    match result {
        Ok(()) if !fs.crashed() => {
            expect.settled.insert(name, after);
            expect.in_flight = None;
            Ok(false)
        }
        // Acknowledged, but the cut came inside it (e.g. on a best-effort step): both
        // states stay acceptable, and the next epoch settles which one the disk kept.
        Ok(()) => Ok(true),
        Err(_) if fs.crashed() => Ok(true),
        Err(e) => Err(format!("{name}: {e}")),
    }
}

/// Checks the reopened log against the expectation and settles the in-flight name.
fn verify(k: &Kafko, expect: &mut Expect) -> Result<(), String> {
    let listed = k.list_topics();
    for name in NAMES {
        let on_disk: State = k.describe_topic(name).ok().map(|d| d.config);
        if on_disk.is_some() != listed.iter().any(|t| t == name) {
            return Err(format!("{name}: listing and describe disagree"));
        }
        let settled = expect.settled.get(name).cloned().flatten();
        let ok = match &expect.in_flight {
            Some((n, after)) if *n == name => on_disk == settled || on_disk == *after,
            _ => on_disk == settled,
        };
        if !ok {
            return Err(format!(
                "{name}: on disk {on_disk:?}, expected {settled:?} (in flight: {:?})",
                expect.in_flight
            ));
        }
        expect.settled.insert(name, on_disk);
    }
    expect.in_flight = None;
    Ok(())
}

/// Reopen checks and acknowledged operations of one seed.
async fn run_seed(seed: u64) -> Result<(u64, u64), String> {
    let mut rng = Rng::new(seed);
    let reorder = if rng.chance(1, 4) {
        Reorder::Any
    } else {
        Reorder::Ordered
    };
    let mut expect = Expect::default();
    let mut image: Option<Image> = None;
    let (mut checks, mut acked) = (0, 0);
    for _epoch in 0..4 {
        let fs = match &image {
            None => SimFs::new(Path::new("/data")),
            Some(i) => SimFs::from_image(i),
        };
        let k = open(&fs).await.map_err(|e| format!("reopen: {e}"))?;
        verify(&k, &mut expect)?;
        checks += 1;
        fs.schedule_crash(1 + rng.below(120), rng.next_u64(), reorder);
        for _ in 0..30 {
            if step(&k, &fs, &mut rng, &mut expect).await? {
                break;
            }
            acked += 1;
        }
        image = Some(match fs.image() {
            Some(i) => i,
            None => fs.crash_now(),
        });
        drop(k);
    }
    Ok((checks, acked))
}

#[test]
fn topic_creates_updates_and_deletes_survive_power_loss() {
    let seeds = sim::seed_count(200, 2_000);
    let (mut checks, mut acked) = (0, 0);
    for seed in 0..seeds {
        let rt = sim::paused_runtime();
        match rt.block_on(run_seed(seed)) {
            Ok((c, a)) => {
                checks += c;
                acked += a;
            }
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    eprintln!(
        "topic lifecycle under power loss: {seeds} seeds, {acked} acknowledged operations, {checks} reopen checks"
    );
    assert_eq!(checks, seeds * 4);
    assert!(acked > seeds, "the crash window leaves operations to check");
}
