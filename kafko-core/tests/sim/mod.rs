//! A simulated, in-memory filesystem behind kafko's storage seam, for power-loss and
//! I/O-fault tests (SQLite `test6.c` / TigerBeetle VOPR style).
//!
//! Every file keeps the bytes as of its last `sync_data` plus the list of writes and
//! truncations made since; the namespace keeps the entries as of the last directory
//! fsync plus the list of creations, renames and removals made since. A *crash image*
//! (what the disk holds after a power cut) starts from the synced state and, driven by a
//! seeded PRNG, keeps, drops, tears, zeroes or scrambles each unsynced write and keeps or
//! drops each unsynced directory change:
//!
//! - [`Reorder::Ordered`]: a prefix of the unsynced writes survives, the next one may be
//!   torn (its tail missing, zeroed or random); a prefix of the unsynced directory
//!   changes survives. This is what ext4 `data=ordered` guarantees.
//! - [`Reorder::Any`]: each unsynced write independently survives, vanishes (leaving a
//!   hole of zeros if a later write lands beyond it), is torn, or gets sector-sized noise
//!   in its middle with the rest intact; each
//!   directory change independently survives. Weaker than any real filesystem we know.
//!
//! A crash can be scheduled at the Nth mutating operation (`crash_at`): the image is
//! taken just before that operation and from then on every operation fails with EIO,
//! while the log above keeps running on a dead disk. Faults can also be injected at the
//! Nth operation of a kind (`fail`), for the fault-sweep tests.
#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod model;

use std::any::Any;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use kafko_core::storage::{Storage, StorageFile};

/// A current-thread runtime with paused time: a simulated run is deterministic and never
/// waits on the wall clock (timers jump when every task is idle).
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// A compacted, `fsync = always` topic with 4 KiB segments (so a few records roll and a
/// compaction pass has sealed segments to work on), no time retention.
pub fn small_compacted_topic() -> kafko_core::TopicConfig {
    kafko_core::TopicConfig {
        segment_bytes: 4096,
        fsync: kafko_core::FsyncPolicy::Always,
        cleanup_policy: kafko_core::CleanupPolicy::Compact,
        retention_ms: None,
        ..Default::default()
    }
}

/// Partition 0 of `topic` in one read from its log start, and its high watermark.
pub fn read_partition_zero(k: &kafko_core::Kafko, topic: &str) -> (Vec<kafko_core::Record>, u64) {
    let partition = k.topic(topic).unwrap().partition(0).unwrap();
    let offsets = partition.offsets().unwrap();
    let records = partition
        .read(offsets.log_start, 10_000, 1 << 24)
        .unwrap()
        .records;
    (records, offsets.high_watermark)
}

/// How many seeds a simulation test runs: `KAFKO_SIM_SEEDS` if set, else `long` under
/// `KAFKO_LONG=1` (`scripts/test.sh --long`), else `default`.
pub fn seed_count(default: u64, long: u64) -> u64 {
    if let Some(n) = std::env::var("KAFKO_SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    if std::env::var("KAFKO_LONG").is_ok_and(|v| v == "1") {
        long
    } else {
        default
    }
}

/// SplitMix64: small, fast, and good enough to drive a simulation from one seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// How unsynced changes may be reordered by the simulated crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reorder {
    Ordered,
    Any,
}

/// Operation kinds, for fault injection and statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Append,
    Sync,
    Truncate,
    Open,
    Read,
    WriteSynced,
    Rename,
    Remove,
    SyncDir,
    CreateDir,
    List,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Dir,
    File(u64),
}

#[derive(Debug, Clone)]
enum FileOp {
    Write { at: u64, data: Vec<u8> },
    Truncate(u64),
}

#[derive(Debug, Clone, Default)]
struct Inode {
    data: Vec<u8>,
    synced: Vec<u8>,
    unsynced: Vec<FileOp>,
}

#[derive(Debug, Clone)]
enum DirOp {
    Create(PathBuf, Node),
    Remove(PathBuf),
    Rename(PathBuf, PathBuf),
}

impl DirOp {
    fn touches(&self, dir: &Path) -> bool {
        let parent = |p: &Path| p.parent() == Some(dir);
        match self {
            DirOp::Create(p, _) | DirOp::Remove(p) => parent(p),
            DirOp::Rename(a, b) => parent(a) || parent(b),
        }
    }
}

/// A fault to inject: the `nth` (1-based) operation of kind `op` fails.
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    pub op: Op,
    pub nth: u64,
    /// For appends: bytes of the failing write that still land.
    pub partial: usize,
}

/// What an injected fault hit.
#[derive(Debug, Clone)]
pub struct FaultHit {
    pub op: Op,
    pub nth: u64,
    pub path: PathBuf,
}

/// The disk after a power cut: a namespace and file contents, all of it durable.
#[derive(Debug, Clone, Default)]
pub struct Image {
    nodes: BTreeMap<PathBuf, Node>,
    files: HashMap<u64, Vec<u8>>,
}

impl Image {
    /// Paths of every file, sorted.
    pub fn files(&self) -> Vec<PathBuf> {
        self.nodes
            .iter()
            .filter(|(_, n)| matches!(n, Node::File(_)))
            .map(|(p, _)| p.clone())
            .collect()
    }
}

struct State {
    nodes: BTreeMap<PathBuf, Node>,
    durable: BTreeMap<PathBuf, Node>,
    pending: Vec<DirOp>,
    inodes: HashMap<u64, Inode>,
    next_ino: u64,
    locks: HashSet<PathBuf>,
    /// Mutating operations so far (the crash clock).
    ticks: u64,
    crash_at: Option<u64>,
    crash_rng: Rng,
    reorder: Reorder,
    image: Option<Image>,
    fault: Option<Fault>,
    fault_hit: Option<FaultHit>,
    counts: BTreeMap<Op, u64>,
    trace: bool,
}

/// The simulated filesystem. Clone to share; every clone is the same disk.
#[derive(Clone)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

fn eio(what: &str) -> io::Error {
    io::Error::other(format!("simulated EIO: {what}"))
}

fn not_found(p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", p.display()),
    )
}

impl SimFs {
    /// An empty disk holding the (durable) directory `root` and its ancestors.
    pub fn new(root: &Path) -> Self {
        let mut nodes = BTreeMap::new();
        for a in root.ancestors() {
            nodes.insert(a.to_path_buf(), Node::Dir);
        }
        Self::from_parts(nodes, HashMap::new())
    }

    /// A disk booted from a crash image: everything in it is durable.
    pub fn from_image(image: &Image) -> Self {
        Self::from_parts(image.nodes.clone(), image.files.clone())
    }

    fn from_parts(nodes: BTreeMap<PathBuf, Node>, files: HashMap<u64, Vec<u8>>) -> Self {
        let next_ino = files.keys().max().map_or(1, |m| m + 1);
        let inodes = files
            .into_iter()
            .map(|(ino, data)| {
                (
                    ino,
                    Inode {
                        synced: data.clone(),
                        data,
                        unsynced: Vec::new(),
                    },
                )
            })
            .collect();
        SimFs {
            state: Arc::new(Mutex::new(State {
                durable: nodes.clone(),
                nodes,
                pending: Vec::new(),
                inodes,
                next_ino,
                locks: HashSet::new(),
                ticks: 0,
                crash_at: None,
                crash_rng: Rng::new(0),
                reorder: Reorder::Ordered,
                image: None,
                fault: None,
                fault_hit: None,
                counts: BTreeMap::new(),
                trace: false,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn storage(&self) -> Arc<dyn Storage> {
        Arc::new(self.clone())
    }

    /// Schedules a power cut just before mutating operation number `tick` (from now).
    pub fn schedule_crash(&self, tick: u64, seed: u64, reorder: Reorder) {
        let mut s = self.lock();
        s.crash_at = Some(s.ticks + tick.max(1));
        s.crash_rng = Rng::new(seed);
        s.reorder = reorder;
    }

    /// Cuts the power now (if it was not cut already) and returns the disk image.
    pub fn crash_now(&self) -> Image {
        let mut s = self.lock();
        if s.image.is_none() {
            let img = s.crash_image();
            s.image = Some(img);
        }
        s.image.clone().unwrap()
    }

    /// Whether the scheduled power cut has happened.
    pub fn crashed(&self) -> bool {
        self.lock().image.is_some()
    }

    /// The image of the scheduled crash, if it happened.
    pub fn image(&self) -> Option<Image> {
        self.lock().image.clone()
    }

    /// Everything as it stands, as if the process (not the machine) died: the page
    /// cache survives, so every write is kept.
    pub fn process_restart_image(&self) -> Image {
        let s = self.lock();
        Image {
            nodes: s.nodes.clone(),
            files: s.inodes.iter().map(|(i, n)| (*i, n.data.clone())).collect(),
        }
    }

    pub fn set_fault(&self, fault: Option<Fault>) {
        let mut s = self.lock();
        s.fault = fault;
        s.fault_hit = None;
    }

    pub fn fault_hit(&self) -> Option<FaultHit> {
        self.lock().fault_hit.clone()
    }

    pub fn set_trace(&self, on: bool) {
        self.lock().trace = on;
    }

    /// Operations of each kind so far.
    pub fn counts(&self) -> BTreeMap<Op, u64> {
        self.lock().counts.clone()
    }

    pub fn ticks(&self) -> u64 {
        self.lock().ticks
    }

    /// Live (page-cache) content of a file.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.lock();
        match s.nodes.get(path)? {
            Node::File(ino) => Some(s.inodes[ino].data.clone()),
            Node::Dir => None,
        }
    }

    /// Live namespace: every file path.
    pub fn files(&self) -> Vec<PathBuf> {
        self.lock()
            .nodes
            .iter()
            .filter(|(_, n)| matches!(n, Node::File(_)))
            .map(|(p, _)| p.clone())
            .collect()
    }
}

impl State {
    /// Counts an operation, runs the crash clock and the fault injector.
    fn enter(&mut self, op: Op, path: &Path, mutating: bool) -> io::Result<()> {
        if self.trace {
            eprintln!("sim: #{} {op:?} {}", self.ticks, path.display());
        }
        if self.image.is_some() {
            return Err(eio("the power is off"));
        }
        if mutating {
            self.ticks += 1;
            if self.crash_at.is_some_and(|c| self.ticks >= c) {
                let img = self.crash_image();
                self.image = Some(img);
                return Err(eio("power cut"));
            }
        }
        let n = {
            let c = self.counts.entry(op).or_insert(0);
            *c += 1;
            *c
        };
        if let Some(f) = self.fault
            && f.op == op
            && f.nth == n
        {
            self.fault_hit = Some(FaultHit {
                op,
                nth: n,
                path: path.to_path_buf(),
            });
            return Err(eio(&format!("injected at {op:?} #{n}")));
        }
        Ok(())
    }

    fn is_dir(&self, p: &Path) -> bool {
        matches!(self.nodes.get(p), Some(Node::Dir))
    }

    /// The inode of the file at `path`, creating an empty file there if it is absent.
    fn file_or_new(&mut self, path: &Path) -> io::Result<u64> {
        match self.nodes.get(path) {
            Some(Node::File(ino)) => Ok(*ino),
            Some(Node::Dir) => Err(io::Error::other("is a directory")),
            None => {
                self.parent_must_exist(path)?;
                Ok(self.new_file(path))
            }
        }
    }

    fn parent_must_exist(&self, p: &Path) -> io::Result<()> {
        match p.parent() {
            Some(parent) if !self.is_dir(parent) => Err(not_found(parent)),
            _ => Ok(()),
        }
    }

    fn new_file(&mut self, path: &Path) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(ino, Inode::default());
        self.nodes.insert(path.to_path_buf(), Node::File(ino));
        self.pending
            .push(DirOp::Create(path.to_path_buf(), Node::File(ino)));
        ino
    }

    /// The disk after a power cut now, with unsynced changes kept or damaged at random.
    fn crash_image(&mut self) -> Image {
        let mut rng = self.crash_rng.clone();
        let mut nodes = self.durable.clone();
        let keep_prefix = rng.below(self.pending.len() as u64 + 1) as usize;
        for (i, op) in self.pending.iter().enumerate() {
            let keep = match self.reorder {
                Reorder::Ordered => i < keep_prefix,
                Reorder::Any => rng.chance(1, 2),
            };
            if keep {
                apply_dir_op(&mut nodes, op);
            }
        }
        // An entry whose directory did not survive is gone too (parents sort first).
        let all: Vec<PathBuf> = nodes.keys().cloned().collect();
        for p in all {
            if let Some(parent) = p.parent()
                && !matches!(nodes.get(parent), Some(Node::Dir))
            {
                nodes.remove(&p);
            }
        }
        let mut files = HashMap::new();
        let mut inos: Vec<u64> = nodes
            .values()
            .filter_map(|n| match n {
                Node::File(i) => Some(*i),
                Node::Dir => None,
            })
            .collect();
        inos.sort_unstable();
        inos.dedup();
        for ino in inos {
            let inode = &self.inodes[&ino];
            files.insert(ino, crash_file(inode, &mut rng, self.reorder));
        }
        Image { nodes, files }
    }
}

fn apply_dir_op(nodes: &mut BTreeMap<PathBuf, Node>, op: &DirOp) {
    match op {
        DirOp::Create(p, n) => {
            nodes.insert(p.clone(), *n);
        }
        DirOp::Remove(p) => {
            let doomed: Vec<PathBuf> = nodes.keys().filter(|k| k.starts_with(p)).cloned().collect();
            for k in doomed {
                nodes.remove(&k);
            }
        }
        DirOp::Rename(from, to) => {
            if !nodes.contains_key(from) {
                return;
            }
            let moved: Vec<(PathBuf, Node)> = nodes
                .iter()
                .filter(|(k, _)| k.starts_with(from))
                .map(|(k, n)| (k.clone(), *n))
                .collect();
            let replaced: Vec<PathBuf> = nodes
                .keys()
                .filter(|k| k.starts_with(to))
                .cloned()
                .collect();
            for k in replaced {
                nodes.remove(&k);
            }
            for (k, n) in moved {
                nodes.remove(&k);
                let rest = k.strip_prefix(from).expect("prefix");
                nodes.insert(to.join(rest), n);
            }
        }
    }
}

fn write_at(data: &mut Vec<u8>, at: u64, bytes: &[u8]) {
    let at = at as usize;
    if data.len() < at + bytes.len() {
        data.resize(at + bytes.len(), 0);
    }
    data[at..at + bytes.len()].copy_from_slice(bytes);
}

/// A damaged version of `bytes`: torn (a prefix, then nothing, zeros or noise), or
/// (under `Any`) sector-sized noise in the middle.
fn damage(bytes: &[u8], rng: &mut Rng, reorder: Reorder) -> Vec<u8> {
    let n = bytes.len();
    // Only `Any` damages the middle of a write and keeps what follows.
    let kinds = if reorder == Reorder::Any { 4 } else { 3 };
    match rng.below(kinds) {
        0 => bytes[..rng.below(n as u64 + 1) as usize].to_vec(),
        1 => {
            let cut = rng.below(n as u64 + 1) as usize;
            let mut v = bytes[..cut].to_vec();
            v.resize(n, 0);
            v
        }
        2 => {
            let cut = rng.below(n as u64 + 1) as usize;
            let mut v = bytes[..cut].to_vec();
            v.extend(rng.bytes(n - cut));
            v
        }
        _ => {
            // Sector-sized noise somewhere inside the write.
            let mut v = bytes.to_vec();
            if n > 0 {
                let at = rng.below(n as u64) as usize;
                let len = (1 + rng.below(512) as usize).min(n - at);
                let noise = rng.bytes(len);
                v[at..at + len].copy_from_slice(&noise);
            }
            v
        }
    }
}

fn crash_file(inode: &Inode, rng: &mut Rng, reorder: Reorder) -> Vec<u8> {
    let mut data = inode.synced.clone();
    let ops = &inode.unsynced;
    if ops.is_empty() {
        return data;
    }
    match reorder {
        Reorder::Ordered => {
            let keep = rng.below(ops.len() as u64 + 1) as usize;
            for (i, op) in ops.iter().enumerate() {
                match (op, i.cmp(&keep)) {
                    (FileOp::Write { at, data: w }, std::cmp::Ordering::Less) => {
                        write_at(&mut data, *at, w)
                    }
                    (FileOp::Truncate(len), std::cmp::Ordering::Less) => {
                        data.truncate(*len as usize)
                    }
                    (FileOp::Write { at, data: w }, std::cmp::Ordering::Equal) => {
                        write_at(&mut data, *at, &damage(w, rng, reorder))
                    }
                    _ => break,
                }
            }
        }
        Reorder::Any => {
            for op in ops {
                match op {
                    FileOp::Write { at, data: w } => match rng.below(4) {
                        0 | 1 => write_at(&mut data, *at, w),
                        2 => {}
                        _ => write_at(&mut data, *at, &damage(w, rng, reorder)),
                    },
                    FileOp::Truncate(len) => {
                        if rng.chance(1, 2) {
                            data.truncate(*len as usize)
                        }
                    }
                }
            }
        }
    }
    data
}

struct SimFile {
    fs: SimFs,
    ino: u64,
    path: PathBuf,
}

impl StorageFile for SimFile {
    fn append(&self, buf: &[u8]) -> io::Result<()> {
        let mut s = self.fs.lock();
        if let Err(e) = s.enter(Op::Append, &self.path, true) {
            // An injected failure may still land part of the write.
            let keep = partial_of(&s, Op::Append).min(buf.len());
            if keep > 0 && s.image.is_none() {
                let inode = s.inodes.get_mut(&self.ino).expect("inode");
                let at = inode.data.len() as u64;
                inode.data.extend_from_slice(&buf[..keep]);
                inode.unsynced.push(FileOp::Write {
                    at,
                    data: buf[..keep].to_vec(),
                });
            }
            return Err(e);
        }
        let inode = s.inodes.get_mut(&self.ino).expect("inode");
        let at = inode.data.len() as u64;
        inode.data.extend_from_slice(buf);
        inode.unsynced.push(FileOp::Write {
            at,
            data: buf.to_vec(),
        });
        Ok(())
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        let mut s = self.fs.lock();
        s.enter(Op::Read, &self.path, false)?;
        let data = &s.inodes[&self.ino].data;
        let pos = pos as usize;
        if pos >= data.len() {
            return Ok(0);
        }
        let n = buf.len().min(data.len() - pos);
        buf[..n].copy_from_slice(&data[pos..pos + n]);
        Ok(n)
    }
    fn sync_data(&self) -> io::Result<()> {
        let mut s = self.fs.lock();
        s.enter(Op::Sync, &self.path, true)?;
        let inode = s.inodes.get_mut(&self.ino).expect("inode");
        inode.synced = inode.data.clone();
        inode.unsynced.clear();
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        let s = self.fs.lock();
        if s.image.is_some() {
            return Err(eio("the power is off"));
        }
        Ok(s.inodes[&self.ino].data.len() as u64)
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut s = self.fs.lock();
        s.enter(Op::Truncate, &self.path, true)?;
        let inode = s.inodes.get_mut(&self.ino).expect("inode");
        inode.data.resize(len as usize, 0);
        inode.unsynced.push(FileOp::Truncate(len));
        Ok(())
    }
}

/// An injected append failure may still land `partial` bytes.
fn partial_of(s: &State, op: Op) -> usize {
    match (s.fault, &s.fault_hit) {
        (Some(f), Some(h)) if f.op == op && h.op == op => f.partial,
        _ => 0,
    }
}

struct LockGuard {
    fs: SimFs,
    path: PathBuf,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.fs.lock().locks.remove(&self.path);
    }
}

impl Storage for SimFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        if s.is_dir(path) {
            return Ok(());
        }
        s.enter(Op::CreateDir, path, true)?;
        let mut missing: Vec<PathBuf> = path
            .ancestors()
            .take_while(|a| !s.nodes.contains_key(*a))
            .map(Path::to_path_buf)
            .collect();
        missing.reverse();
        for m in missing {
            s.nodes.insert(m.clone(), Node::Dir);
            s.pending.push(DirOp::Create(m, Node::Dir));
        }
        if !s.is_dir(path) {
            return Err(io::Error::other("not a directory"));
        }
        Ok(())
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let mut s = self.lock();
        s.enter(Op::Open, path, true)?;
        let ino = s.file_or_new(path)?;
        Ok(Arc::new(SimFile {
            fs: self.clone(),
            ino,
            path: path.to_path_buf(),
        }))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut s = self.lock();
        s.enter(Op::Read, path, false)?;
        match s.nodes.get(path) {
            Some(Node::File(ino)) => Ok(s.inodes[ino].data.clone()),
            Some(Node::Dir) => Err(io::Error::other("is a directory")),
            None => Err(not_found(path)),
        }
    }
    fn write_synced(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut s = self.lock();
        s.enter(Op::WriteSynced, path, true)?;
        let ino = s.file_or_new(path)?;
        let inode = s.inodes.get_mut(&ino).expect("inode");
        inode.data = data.to_vec();
        inode.synced = data.to_vec();
        inode.unsynced.clear();
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.lock();
        s.enter(Op::Rename, from, true)?;
        if !s.nodes.contains_key(from) {
            return Err(not_found(from));
        }
        s.parent_must_exist(to)?;
        let op = DirOp::Rename(from.to_path_buf(), to.to_path_buf());
        apply_dir_op(&mut s.nodes, &op);
        s.pending.push(op);
        Ok(())
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        s.enter(Op::Remove, path, true)?;
        match s.nodes.get(path) {
            Some(Node::File(_)) => {}
            Some(Node::Dir) => return Err(io::Error::other("is a directory")),
            None => return Err(not_found(path)),
        }
        s.nodes.remove(path);
        s.pending.push(DirOp::Remove(path.to_path_buf()));
        Ok(())
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        s.enter(Op::Remove, path, true)?;
        if !s.nodes.contains_key(path) {
            return Err(not_found(path));
        }
        let op = DirOp::Remove(path.to_path_buf());
        apply_dir_op(&mut s.nodes, &op);
        s.pending.push(op);
        Ok(())
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        s.enter(Op::SyncDir, path, true)?;
        if !s.is_dir(path) {
            return Err(not_found(path));
        }
        let pending = std::mem::take(&mut s.pending);
        let mut rest = Vec::with_capacity(pending.len());
        for op in pending {
            if op.touches(path) {
                apply_dir_op(&mut s.durable, &op);
            } else {
                rest.push(op);
            }
        }
        s.pending = rest;
        Ok(())
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut s = self.lock();
        s.enter(Op::List, path, false)?;
        if !s.is_dir(path) {
            return Err(not_found(path));
        }
        Ok(s.nodes
            .keys()
            .filter(|k| k.parent() == Some(path))
            .cloned()
            .collect())
    }
    fn exists(&self, path: &Path) -> bool {
        self.lock().nodes.contains_key(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        let mut s = self.lock();
        s.enter(Op::Open, path, false)?;
        if !s.nodes.contains_key(path) {
            s.parent_must_exist(path)?;
            s.new_file(path);
        }
        if !s.locks.insert(path.to_path_buf()) {
            return Err(io::Error::from(io::ErrorKind::WouldBlock));
        }
        Ok(Box::new(LockGuard {
            fs: self.clone(),
            path: path.to_path_buf(),
        }))
    }
}
