//! I/O failures injected (through the storage seam) at each file operation of a
//! compaction swap: the pass fails with a typed error, reads keep returning the latest
//! value per key, and after a restart the partition holds either the old or the new
//! segment set with every latest value intact and no temp file left.
mod common;
mod gc_support;

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::interposed::{Hook, Interposed};
use gc_support::{compacted, latest, read_all, send_keyed_and_seal};
use kafko_core::Kafko;

/// Decides whether an operation (`"open"`, `"rename"`, …) on a path should fail.
type Rule = Box<dyn Fn(&str, &Path) -> bool + Send + Sync>;

/// The real file system, except for the operations a rule picks (once armed).
#[derive(Clone, Default)]
struct Faulty {
    rule: Arc<Mutex<Option<Rule>>>,
}

impl Faulty {
    fn arm(&self, rule: impl Fn(&str, &Path) -> bool + Send + Sync + 'static) {
        *self.rule.lock().unwrap() = Some(Box::new(rule));
    }
    fn check(&self, op: &str, path: &Path) -> io::Result<()> {
        match &*self.rule.lock().unwrap() {
            Some(rule) if rule(op, path) => Err(io::Error::other(format!("injected {op} failure"))),
            _ => Ok(()),
        }
    }
}

impl Hook for Faulty {
    fn before(&self, op: &str, path: &Path) -> io::Result<()> {
        self.check(op, path)
    }
}

fn ends(path: &Path, suffix: &str) -> bool {
    path.to_string_lossy().ends_with(suffix)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_at_each_swap_step_leaves_a_consistent_log() {
    let steps: Vec<(&str, Rule)> = vec![
        (
            "create .cleaned",
            Box::new(|op, p| op == "open" && ends(p, ".cleaned")),
        ),
        (
            "rename to .swap",
            Box::new(|op, p| op == "rename" && ends(p, ".swap")),
        ),
        (
            "delete an old segment",
            Box::new(|op, p| op == "remove" && ends(p, "0000000000.log")),
        ),
        (
            "rename .swap to .log",
            Box::new(|op, p| op == "rename" && ends(p, ".log")),
        ),
        (
            "write the new index",
            Box::new(|op, p| op == "write" && ends(p, ".index.tmp")),
        ),
    ];
    for (name, rule) in steps {
        let dir = tempfile::tempdir().unwrap();
        let faulty = Faulty::default();
        let open = |s: Faulty| {
            let dir = dir.path().to_path_buf();
            async move {
                Kafko::builder(&dir)
                    .storage(Arc::new(Interposed(s)))
                    .retention_check_interval(std::time::Duration::from_secs(86_400))
                    .open()
                    .await
                    .unwrap()
            }
        };
        let k = open(faulty.clone()).await;
        k.create_topic_with_config("t", compacted(1)).await.unwrap();
        send_keyed_and_seal(&k, "t", (200, 6), |i| format!("{i:0>80}")).await;
        let expected = latest(&k, "t");
        faulty.arm(rule);
        let err = k.compact_now("t").await;
        assert!(
            err.is_err(),
            "step '{name}': the injected failure was not reported"
        );
        assert_eq!(
            latest(&k, "t"),
            expected,
            "step '{name}': reads changed after the failure"
        );
        *faulty.rule.lock().unwrap() = None;
        // Stop, then drop the marker so the reopen takes the crash-recovery path over
        // whatever the failed swap left on disk.
        k.shutdown().await.unwrap();
        drop(k);
        let _ = std::fs::remove_file(dir.path().join("clean-shutdown"));

        let k = open(Faulty::default()).await;
        assert_eq!(
            latest(&k, "t"),
            expected,
            "step '{name}': recovery lost a latest value"
        );
        let records = read_all(&k, "t", 0);
        assert!(records.windows(2).all(|w| w[0].offset < w[1].offset));
        let leftovers: Vec<String> = std::fs::read_dir(dir.path().join("topics/t/0"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".swap") || n.ends_with(".cleaned") || n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "step '{name}' left {leftovers:?}");
        // A later pass completes the work.
        k.compact_now("t").await.unwrap();
        assert_eq!(read_all(&k, "t", 0).len(), expected.len() + 1);
        k.shutdown().await.unwrap();
    }
}
