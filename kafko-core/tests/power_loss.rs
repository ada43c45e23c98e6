//! Simulated power loss: random workloads (topics with `fsync` always / never / interval,
//! single, batched and concurrent sends with and without `sync`, `sync()`, retention,
//! compaction, clean shutdowns) run on the simulated disk of `sim`, the power is cut at a
//! random operation — while the log is live, in the middle of recovery, or during a
//! shutdown — and the log is reopened on the crash image, several times per seed. Each
//! reopen must recover every durable acknowledged record byte for byte at its offset,
//! keep each partition a gap-free prefix, serve nothing that was not sent, and never panic
//! (see `sim::model` for the exact invariants).
//!
//! Unsynced writes are kept in order with a torn last one (`Ordered`, ext4's guarantee)
//! for most seeds; one seed in four lets every unsynced write and directory change land
//! or not independently (`Any`). Under `Any` a hole can open *between* two unsynced
//! batches; recovery then cannot tell it from mid-file corruption and refuses to open
//! with `Corruption` — acceptable (typed, loud, nothing wrong served, nothing durable
//! involved) and counted, but only under `Any`.
//!
//! Default: 1,200 seeds. `KAFKO_LONG=1`: 20,000. `KAFKO_SIM_SEEDS=n` sets the count;
//! `KAFKO_SIM_SEED=s` replays one seed (`KAFKO_SIM_TRACE=1`: with a trace of every
//! storage operation).
mod sim;

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

use kafko_core::KafkoError;
use sim::model::{LiveOffsets, Model, Step, open};
use sim::{Image, Reorder, Rng, SimFs};

/// Mutating storage operations an epoch is cut within (an epoch runs about this many).
const CRASH_WINDOW: u64 = 400;

static PANICS: AtomicU64 = AtomicU64::new(0);

fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    seeds: u64,
    epochs: u64,
    power_cuts: u64,
    cuts_during_open: u64,
    clean_shutdowns: u64,
    refused_any_mode: u64,
    acked: u64,
    durable_checked: u64,
    records_checked: u64,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.seeds += o.seeds;
        self.epochs += o.epochs;
        self.power_cuts += o.power_cuts;
        self.cuts_during_open += o.cuts_during_open;
        self.clean_shutdowns += o.clean_shutdowns;
        self.refused_any_mode += o.refused_any_mode;
        self.acked += o.acked;
        self.durable_checked += o.durable_checked;
        self.records_checked += o.records_checked;
    }
}

async fn run_seed(seed: u64, trace: bool) -> Result<Stats, String> {
    let mut rng = Rng::new(seed);
    let reorder = if rng.chance(1, 4) {
        Reorder::Any
    } else {
        Reorder::Ordered
    };
    let mut stats = Stats {
        seeds: 1,
        ..Default::default()
    };
    let mut model = Model::new(seed);
    let mut image: Option<Image> = None;
    let mut live: Option<LiveOffsets> = None;
    let mut retention_in_flight = false;
    let mut expect_clean = false;
    let epochs = 2 + rng.below(3);
    for epoch in 0..=epochs {
        let last = epoch == epochs;
        stats.epochs += 1;
        let fs = match &image {
            None => SimFs::new(std::path::Path::new("/data")),
            Some(i) => SimFs::from_image(i),
        };
        fs.set_trace(trace);
        if !last {
            fs.schedule_crash(1 + rng.below(CRASH_WINDOW), rng.next_u64(), reorder);
        }
        let k = match open(&fs).await {
            Ok(k) => k,
            Err(_) if fs.crashed() => {
                stats.power_cuts += 1;
                stats.cuts_during_open += 1;
                image = fs.image();
                live = None;
                // The marker's removal may or may not have reached the disk.
                expect_clean = false;
                continue;
            }
            Err(e @ KafkoError::Corruption { .. }) if reorder == Reorder::Any => {
                if trace {
                    eprintln!("seed {seed}: open refused under Any: {e}");
                }
                stats.refused_any_mode += 1;
                break;
            }
            Err(e) => return Err(format!("epoch {epoch}: open failed: {e}")),
        };
        if fs.crashed() {
            // The cut hit an operation whose failure open tolerates.
            stats.power_cuts += 1;
            stats.cuts_during_open += 1;
            image = fs.image();
            live = None;
            expect_clean = false;
            continue;
        }
        if expect_clean && !k.recovered_clean() {
            return Err(format!("epoch {epoch}: clean shutdown not recognised"));
        }
        model
            .verify(&k, false, live.as_ref(), retention_in_flight)
            .map_err(|e| format!("epoch {epoch}: {e}"))?;
        if last {
            k.shutdown()
                .await
                .map_err(|e| format!("final shutdown: {e}"))?;
            break;
        }
        expect_clean = false;
        retention_in_flight = false;
        let mut cut_in = None;
        if epoch == 0 {
            let s = model.create_topics(&k, &mut rng).await;
            if fs.crashed() {
                cut_in = Some(s);
            }
        }
        let steps = 5 + rng.below(40);
        for _ in 0..steps {
            if cut_in.is_some() {
                break;
            }
            let s = model.step(&k, &mut rng).await;
            if fs.crashed() {
                cut_in = Some(s);
            }
        }
        if let Some(step) = cut_in {
            stats.power_cuts += 1;
            retention_in_flight = step == Step::Retention;
            live = Some(model.capture(&k));
            image = fs.image();
        } else if rng.chance(1, 2) {
            live = Some(model.capture(&k));
            let r = k.shutdown().await;
            if r.is_ok() {
                stats.clean_shutdowns += 1;
                model.mark_durable(None);
                expect_clean = true;
            } else if !fs.crashed() {
                return Err(format!("epoch {epoch}: shutdown failed: {r:?}"));
            } else {
                stats.power_cuts += 1;
            }
            image = Some(fs.crash_now());
        } else {
            stats.power_cuts += 1;
            image = Some(fs.crash_now());
            live = Some(model.capture(&k));
        }
        drop(k);
    }
    stats.acked = model.acked;
    stats.durable_checked = model.durable_checked;
    stats.records_checked = model.records_checked;
    Ok(stats)
}

fn run_one(seed: u64, trace: bool) -> Result<Stats, String> {
    let rt = sim::paused_runtime();
    let before = PANICS.load(Ordering::SeqCst);
    // A hung seed must fail the run (naming the seed), never hang the suite.
    let (done, watchdog) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            watchdog.recv_timeout(std::time::Duration::from_secs(60))
        {
            eprintln!("power loss: seed {seed} hung for 60 s; replay with KAFKO_SIM_SEED={seed}");
            std::process::exit(101);
        }
    });
    let result = rt.block_on(run_seed(seed, trace));
    let _ = done.send(());
    drop(rt);
    if PANICS.load(Ordering::SeqCst) != before {
        return Err("a panic happened (see the log above)".into());
    }
    result
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn acknowledged_durable_records_survive_power_loss_at_any_point() {
    count_panics();
    if let Some(seed) = env_u64("KAFKO_SIM_SEED") {
        // The seed fixes the workload, the crash points and the damage. Thread timing
        // can still reorder a few storage operations (fdatasync runs on tokio's blocking
        // pool, topics are shut down in hash order), so a replay tries a few times.
        let trace = std::env::var("KAFKO_SIM_TRACE").is_ok_and(|v| v == "1");
        for attempt in 1..=20 {
            if let Err(e) = run_one(seed, trace) {
                panic!("seed {seed} (attempt {attempt}): {e}");
            }
        }
        eprintln!("seed {seed}: 20 replays passed");
        return;
    }
    let seeds = sim::seed_count(1_200, 20_000);
    let mut total = Stats::default();
    let mut failures = Vec::new();
    for seed in 0..seeds {
        match run_one(seed, false) {
            Ok(s) => total.add(&s),
            Err(e) => {
                eprintln!("seed {seed} FAILED: {e}");
                failures.push(seed);
                if failures.len() >= 5 {
                    break;
                }
            }
        }
    }
    eprintln!("power loss: {total:?}");
    assert!(
        failures.is_empty(),
        "failing seeds {failures:?}; replay with KAFKO_SIM_SEED=<seed> cargo test -p kafko-core --test power_loss"
    );
    assert_eq!(total.seeds, seeds);
    assert!(
        total.power_cuts >= seeds,
        "every seed cuts the power at least once"
    );
    assert!(total.durable_checked > 0 && total.clean_shutdowns > 0);
}
