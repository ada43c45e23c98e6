//! I/O errors injected at the Nth operation of each kind — append (with and without a
//! partial write landing), fsync, state-file write, rename, open, remove, truncate,
//! directory create and directory fsync — for every N a fixed workload reaches (topics
//! with every fsync policy, rolls, retention, compaction, a restart in the middle).
//! Whatever fails:
//! - nothing is acknowledged that was not written: a restart on healthy storage (the same
//!   disk, page cache intact, as after a process restart) recovers every acknowledged
//!   record byte for byte at its offset, each partition a gap-free prefix, nothing served
//!   that was not sent (checked by `sim::model`);
//! - a failed fsync of a segment makes its partition refuse writes (`PartitionReadOnly`);
//! - open after the fault never fails on healthy storage and never panics.
//!
//! Default: one workload, N strided to ~60 runs per kind across the whole workload.
//! `KAFKO_LONG=1`: twelve workloads, every N of every kind.
//! `KAFKO_SWEEP_TRACE=<workload>:<Op>:<n>` replays one run with a trace of every
//! storage operation.
mod sim;

use std::collections::BTreeMap;
use std::path::Path;

use kafko_core::{Kafko, ProduceError, ProducerRecord, SendOptions};
use sim::model::{Model, Step, open};
use sim::{Fault, FaultHit, Op, Rng, SimFs};

const KINDS: [Op; 9] = [
    Op::Append,
    Op::Sync,
    Op::WriteSynced,
    Op::Rename,
    Op::Open,
    Op::Remove,
    Op::Truncate,
    Op::CreateDir,
    Op::SyncDir,
];

const STEPS: usize = 90;
const RESTART_AT: usize = 45;

/// The fault, shifted onto a fresh disk after a restart (its counters start over).
fn carry_fault(old: &SimFs, new: &SimFs, fault: Option<Fault>) {
    let Some(f) = fault else { return };
    if old.fault_hit().is_some() {
        return;
    }
    let done = old.counts().get(&f.op).copied().unwrap_or(0);
    new.set_fault(Some(Fault {
        nth: f.nth - done,
        ..f
    }));
}

/// `topics/<topic>/<p>/<base>.log` → `(topic, p)`.
fn partition_of(path: &Path) -> Option<(String, u32)> {
    if path.extension()? != "log" {
        return None;
    }
    let p: u32 = path.parent()?.file_name()?.to_str()?.parse().ok()?;
    let topic = path.parent()?.parent()?.file_name()?.to_str()?.to_owned();
    Some((topic, p))
}

#[derive(Debug, Default)]
struct Outcome {
    hit: Option<FaultHit>,
    hit_in: Option<Step>,
    read_only_checked: bool,
}

/// Records the first time the fault fired, and in which step.
fn note(fs: &SimFs, out: &mut Outcome, step: Step) {
    if out.hit.is_none()
        && let Some(h) = fs.fault_hit()
    {
        out.hit = Some(h);
        out.hit_in = Some(step);
    }
}

async fn reopen(fs: &SimFs) -> Result<Kafko, String> {
    match open(fs).await {
        Ok(k) => Ok(k),
        // The fault may have hit open itself; it fires once, so a second open is healthy.
        Err(_) => open(fs)
            .await
            .map_err(|e| format!("open on healthy storage failed: {e}")),
    }
}

async fn run(workload: u64, fault: Option<Fault>) -> Result<(Outcome, BTreeMap<Op, u64>), String> {
    let mut rng = Rng::new(workload);
    let mut model = Model::new(workload);
    model.all_topics = true;
    model.max_pad = Some(1200);
    let mut fs = SimFs::new(Path::new("/data"));
    fs.set_fault(fault);
    let trace = std::env::var("KAFKO_SWEEP_TRACE").is_ok();
    fs.set_trace(trace);
    let mut out = Outcome::default();
    let mut k = reopen(&fs).await?;
    let mut counts: BTreeMap<Op, u64> = BTreeMap::new();
    model.create_topics(&k, &mut rng).await;
    note(&fs, &mut out, Step::Create);
    for i in 0..STEPS {
        if i == RESTART_AT {
            let _ = k.shutdown().await;
            note(&fs, &mut out, Step::Shutdown);
            drop(k);
            for (op, n) in fs.counts() {
                *counts.entry(op).or_default() += n;
            }
            let next = SimFs::from_image(&fs.process_restart_image());
            carry_fault(&fs, &next, fault);
            fs = next;
            fs.set_trace(trace);
            k = reopen(&fs).await?;
            note(&fs, &mut out, Step::Open);
            model.verify(&k, true, None, true)?;
            continue;
        }
        let before = out.hit.is_some();
        // Mostly sends, with retention and compaction at fixed points.
        let choice = match i % 10 {
            4 | 7 => 17,
            9 => 16,
            _ => rng.below(16),
        };
        let step = model.step_as(&k, &mut rng, choice).await;
        note(&fs, &mut out, step);
        if !before
            && let Some(h) = &out.hit
            && h.op == Op::Sync
            && let Some((topic, p)) = partition_of(&h.path)
        {
            // The fsync of a segment failed: that partition must refuse writes now. Such
            // an fsync may run on a blocking thread (the interval policy's, a seal's):
            // give that thread the moment between the storage's failure and the log's
            // reaction to it, which the storage's record of the fault does not wait for.
            std::thread::sleep(std::time::Duration::from_millis(20));
            let r = ProducerRecord::new("after-fsync-failure")
                .with_key("k")
                .with_partition(p);
            let err = k
                .topic(&topic)
                .map_err(|e| e.to_string())?
                .produce(vec![r], SendOptions::default())
                .await
                .expect_err("a write was accepted after a failed fsync");
            if !matches!(err, ProduceError::PartitionReadOnly { .. }) {
                return Err(format!("after a failed fsync of {topic}/{p}: {err}"));
            }
            out.read_only_checked = true;
        }
    }
    let _ = k.shutdown().await;
    drop(k);
    for (op, n) in fs.counts() {
        *counts.entry(op).or_default() += n;
    }
    // Restart on healthy storage: everything acknowledged is there.
    let healthy = SimFs::from_image(&fs.process_restart_image());
    let k = open(&healthy)
        .await
        .map_err(|e| format!("open on healthy storage failed: {e}"))?;
    model.verify(&k, true, None, true)?;
    k.shutdown()
        .await
        .map_err(|e| format!("shutdown on healthy storage failed: {e}"))?;
    Ok((out, counts))
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    sim::paused_runtime().block_on(f)
}

fn context(h: &FaultHit) -> String {
    let name = h
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let kind = if name.ends_with(".log") {
        "segment"
    } else if name.ends_with(".cleaned") {
        "compaction output"
    } else if name.ends_with(".swap") {
        "compaction swap"
    } else if name.starts_with("log-start-offset") {
        "log start checkpoint (retention)"
    } else if name.starts_with("topic.json") {
        "topic config"
    } else if name.contains("index") {
        "index"
    } else if name.starts_with("clean-shutdown") {
        "shutdown marker"
    } else if name == "kafko.lock" {
        "lock"
    } else {
        "directory"
    };
    format!("{:?} on {kind}", h.op)
}

/// The contexts every sweep must inject a fault in.
const NEEDED: [&str; 7] = [
    "Rename on log start checkpoint (retention)",
    "Rename on compaction output",
    "Rename on compaction swap",
    "Rename on topic config",
    "Open on segment",
    "Sync on segment",
    "Append on segment",
];

/// What the sweep found so far.
#[derive(Default)]
struct Sweep {
    injected: u64,
    runs: u64,
    read_only_checks: u64,
    contexts: BTreeMap<String, u64>,
    failures: Vec<(u64, Fault)>,
}

impl Sweep {
    /// Runs workload `w` with `fault`; returns the context it hit, if any.
    fn run(&mut self, w: u64, fault: Fault) -> Option<String> {
        self.runs += 1;
        match block_on(run(w, Some(fault))) {
            Ok((o, _)) => {
                self.read_only_checks += u64::from(o.read_only_checked);
                let hit = o.hit.as_ref().map(context)?;
                self.injected += 1;
                *self.contexts.entry(hit.clone()).or_default() += 1;
                Some(hit)
            }
            Err(e) => {
                eprintln!("workload {w}, {fault:?}: {e}");
                self.failures.push((w, fault));
                None
            }
        }
    }
}

#[test]
fn injected_io_errors_never_lose_acknowledged_records() {
    let long = std::env::var("KAFKO_LONG").is_ok_and(|v| v == "1");
    let workloads: Vec<u64> = if long { (1..=12).collect() } else { vec![1, 2] };
    let mut sweep = Sweep::default();
    if let Ok(one) = std::env::var("KAFKO_SWEEP_TRACE") {
        // `workload:Op:nth`, e.g. `1:Rename:27`: replays one run with a trace.
        let parts: Vec<&str> = one.split(':').collect();
        let op = KINDS
            .into_iter()
            .find(|k| format!("{k:?}") == parts[1])
            .expect("op");
        let fault = Fault {
            op,
            nth: parts[2].parse().unwrap(),
            partial: parts.get(3).map_or(0, |p| p.parse().unwrap()),
        };
        block_on(run(parts[0].parse().unwrap(), Some(fault))).unwrap();
        return;
    }
    let mut totals = Vec::new();
    for &w in &workloads {
        let (_, counts) = block_on(run(w, None)).unwrap_or_else(|e| panic!("fault-free: {e}"));
        for op in KINDS {
            let total = counts.get(&op).copied().unwrap_or(0);
            totals.push((w, op, total));
            // Every N in long mode; in the default run a stride that still spans the
            // whole workload with at most ~60 runs per kind.
            let stride = if long { 1 } else { total.div_ceil(60).max(1) };
            for nth in (1..=total).step_by(stride as usize) {
                // A failing append lands nothing or, in long mode, a torn 7 bytes too;
                // in the default run torn and clean failures alternate.
                let partials = match (op, long) {
                    (Op::Append, true) => vec![0, 7],
                    (Op::Append, false) => vec![if nth % 2 == 0 { 7 } else { 0 }],
                    _ => vec![0],
                };
                for partial in partials {
                    sweep.run(w, Fault { op, nth, partial });
                }
            }
        }
    }
    // A needed context the stride stepped over: the first N of its kind that hits it.
    for needed in NEEDED {
        if sweep.contexts.contains_key(needed) {
            continue;
        }
        'search: for &(w, op, total) in &totals {
            if !needed.starts_with(&format!("{op:?} on ")) {
                continue;
            }
            for nth in 1..=total {
                if sweep
                    .run(
                        w,
                        Fault {
                            op,
                            nth,
                            partial: 0,
                        },
                    )
                    .as_deref()
                    == Some(needed)
                {
                    break 'search;
                }
            }
        }
    }
    let Sweep {
        injected,
        runs,
        read_only_checks,
        contexts,
        failures,
    } = sweep;
    eprintln!(
        "fault sweep: {runs} runs, {injected} faults injected, {read_only_checks} read-only checks"
    );
    for (c, n) in &contexts {
        eprintln!("  {c}: {n}");
    }
    assert!(
        failures.is_empty(),
        "{} failing runs: {failures:?}",
        failures.len()
    );
    for needed in NEEDED {
        assert!(contexts.contains_key(needed), "no fault hit: {needed}");
    }
    assert!(read_only_checks > 0);
}
