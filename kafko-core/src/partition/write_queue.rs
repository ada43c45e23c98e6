//! Write groups: who writes a partition, and when. There is no writer task. The
//! partition's write state ([`Writer`]) is a token that one party holds at a time:
//!
//! - A producer that finds the partition idle takes the token and writes its append on
//!   its own task — no hand-off, no wake-up.
//! - A producer that finds it taken queues its append and waits. The leader, after its
//!   write, passes the token to the oldest waiter; that one writes every append queued
//!   by then (up to a group's limits) in one `write`, answers them, and passes the token
//!   on. Concurrent producers so share one syscall, and with fsync one fsync.
//! - Work that has to wait (roll, waiting for a seal, sync, retention, compaction swap,
//!   interval fsync, shutdown) runs on a spawned maintenance task, which queues for the
//!   token like a producer.
//!
//! Invariants:
//! - only the token's holder writes, assigns offsets or changes the segment list;
//! - a producer's task holds the token only inside `lead`, which never awaits: a
//!   producer's future cannot be dropped while it leads, so a client that goes away
//!   never strands the appends queued behind it. Only spawned tasks (not dropped by
//!   clients) hold the token across an `.await`;
//! - an append handed over (queued, or taken by a leader) is written or failed and
//!   answered, whatever becomes of the producer that handed it over: a waiter that is
//!   gone when the token reaches it is written by the party passing the token;
//! - the queue is FIFO: appends are written in the order they were handed over, and a
//!   maintenance task waits behind the appends queued before it;
//! - a reader sees a batch only once it is published (see `writer`).
//!
//! Room in the queue is a semaphore of [`QUEUE_CAPACITY`] permits, taken before an
//! append is handed over and given back once a leader takes it: a send reserves room in
//! every partition it writes before handing anything over (all-or-nothing backpressure).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{Semaphore, TryAcquireError, oneshot};

use super::PartitionLog;
use super::command::Batches;
use super::writer::{Detour, Entry, GroupOutcome, MAX_GROUP_APPENDS, MAX_GROUP_BYTES, Writer};
use crate::error::{KafkoError, Result};

/// Appends that may wait for a partition's token before producers see backpressure.
pub(crate) const QUEUE_CAPACITY: usize = 1024;

/// Forming turns a partition keeps trying after the last sign of concurrency: a few, so
/// a lull of one turn does not end grouping, and few, so a producer left alone soon
/// stops yielding.
const FORMING_CREDIT: u8 = 8;

/// What a waiter receives: its append's outcome, or the token.
pub(crate) enum Answer {
    /// The append's base offset, or why it failed.
    Done(Result<u64>),
    /// The token, with the waiter's own append (none for a maintenance task): the
    /// waiter now leads.
    Lead(Box<Writer>, Option<Promoted>),
}

/// The append of a waiter that was passed the token.
pub(crate) struct Promoted {
    batches: Batches,
    sync: bool,
}

impl Promoted {
    /// The append again, answered on `reply` (a closed one when its producer is gone).
    fn into_entry(self, reply: oneshot::Sender<Answer>) -> Entry {
        Entry {
            batches: self.batches,
            sync: self.sync,
            reply,
        }
    }
}

/// A queued party.
enum Waiting {
    Append(Entry),
    /// A maintenance task waiting for the token.
    Turn(oneshot::Sender<Answer>),
}

/// Why the queue takes nothing new.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Closed {
    /// Shutdown started: queued work finishes, new work is refused.
    ShuttingDown,
    /// Shutdown finished: the token is gone.
    Retired,
    /// The write state was lost in a panic.
    Panicked,
}

struct QueueState {
    /// The token while nobody holds it.
    idle: Option<Box<Writer>>,
    waiting: VecDeque<Waiting>,
    closed: Option<Closed>,
    /// A producer found the partition idle but is letting others join its group first
    /// (see `hand_over`): the idle token is reserved for it.
    forming: bool,
    /// Credit for forming turns: refilled when a producer arrives while the token is
    /// taken, or a forming turn was joined; spent by a turn nobody joined. While it
    /// lasts, the next producer to find the token idle forms a group instead of writing
    /// alone.
    contended: u8,
}

/// The write queue of one partition.
pub(crate) struct WriteQueue {
    log: Arc<PartitionLog>,
    state: Mutex<QueueState>,
    room: Semaphore,
}

type JobFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

impl WriteQueue {
    pub(crate) fn new(log: Arc<PartitionLog>, writer: Writer) -> Arc<Self> {
        Arc::new(WriteQueue {
            log,
            state: Mutex::new(QueueState {
                idle: Some(Box::new(writer)),
                waiting: VecDeque::new(),
                closed: None,
                forming: false,
                contended: 0,
            }),
            room: Semaphore::new(QUEUE_CAPACITY),
        })
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // Every update below leaves the state whole before anything can panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn closed_error(&self, closed: Closed) -> KafkoError {
        match closed {
            Closed::ShuttingDown | Closed::Retired => KafkoError::ShuttingDown,
            Closed::Panicked => KafkoError::PartitionPanicked {
                topic: self.log.topic.to_string(),
                partition: self.log.partition,
            },
        }
    }

    /// The error for a queue that answered nothing: shut down, or lost in a panic.
    pub(crate) fn gone(&self) -> KafkoError {
        let closed = self.lock().closed.unwrap_or(Closed::ShuttingDown);
        self.closed_error(closed)
    }

    /// Takes room for one append. With `wait`, a full queue waits for room; without, it
    /// is `Backpressure`. The room is given back by [`Self::release_room`].
    pub(crate) async fn take_room(&self, wait: bool) -> Result<()> {
        if self.try_take_room()? {
            return Ok(());
        }
        if !wait {
            return Err(KafkoError::Backpressure {
                topic: self.log.topic.to_string(),
                partition: self.log.partition,
            });
        }
        let permit = self.room.acquire().await.map_err(|_| self.gone())?;
        permit.forget();
        Ok(())
    }

    /// Takes room for one append if there is some now (`false`: the queue is full). It
    /// cannot overtake producers already waiting: freed room goes to the longest waiter
    /// first.
    pub(crate) fn try_take_room(&self) -> Result<bool> {
        match self.room.try_acquire() {
            Ok(permit) => {
                permit.forget();
                Ok(true)
            }
            Err(TryAcquireError::NoPermits) => Ok(false),
            Err(TryAcquireError::Closed) => Err(self.gone()),
        }
    }

    /// Gives back room taken by [`Self::take_room`].
    pub(crate) fn release_room(&self, n: usize) {
        self.room.add_permits(n);
    }

    /// Appends waiting or reserved.
    pub(crate) fn depth(&self) -> usize {
        QUEUE_CAPACITY.saturating_sub(self.room.available_permits())
    }

    /// Hands an append over (its room already taken): writes it now, on this task, when
    /// the partition is idle; queues it otherwise. Its answer arrives on `entry.reply`.
    ///
    /// When producers have been queueing (`contended`) and `may_form`, a producer that
    /// finds the partition idle does not write at once: it queues its append first in
    /// line, keeps the token for itself (`forming`) and returns `true`; its waiter then
    /// yields once — so the producers the last group's answers woke can join — and leads
    /// the group ([`Self::finish_forming`]). Without that turn, producers on the same
    /// worker run one after another and each writes alone.
    pub(crate) fn hand_over(self: &Arc<Self>, entry: Entry, may_form: bool) -> bool {
        let mut st = self.lock();
        if let Some(closed) = st.closed {
            drop(st);
            self.release_room(1);
            entry.fail(self.closed_error(closed));
            return false;
        }
        if st.forming || st.idle.is_none() {
            st.contended = FORMING_CREDIT;
            st.waiting.push_back(Waiting::Append(entry));
            return false;
        }
        if st.contended > 0 && may_form {
            st.forming = true;
            st.waiting.push_front(Waiting::Append(entry));
            return true;
        }
        let Some(writer) = st.idle.take() else {
            return false;
        };
        drop(st);
        self.release_room(1);
        lead_here(self, writer, vec![entry]);
        false
    }

    /// Ends a group's forming turn: takes the reserved token and leads everything queued
    /// by now (the forming producer's own append first). A turn that nobody joined
    /// spends a credit; a joined one refills them.
    pub(crate) fn finish_forming(self: &Arc<Self>) {
        let writer = {
            let mut st = self.lock();
            if !st.forming {
                return;
            }
            st.forming = false;
            st.contended = match st.waiting.len() {
                0 | 1 => st.contended.saturating_sub(1),
                _ => FORMING_CREDIT,
            };
            st.idle.take()
        };
        if let Some(writer) = writer {
            let mut group = Vec::new();
            self.top_up(&mut group);
            lead_here(self, writer, group);
        }
    }

    /// Takes appends queued at the front into `group`, up to a group's limits; stops at
    /// a maintenance task (it runs between groups).
    fn top_up(&self, group: &mut Vec<Entry>) {
        let mut bytes: u64 = group.iter().map(|e| e.batches.framed_len()).sum();
        let before = group.len();
        {
            let mut st = self.lock();
            while group.len() < MAX_GROUP_APPENDS && bytes < MAX_GROUP_BYTES {
                match st.waiting.front() {
                    Some(Waiting::Append(e)) => bytes += e.batches.framed_len(),
                    _ => break,
                }
                if let Some(Waiting::Append(e)) = st.waiting.pop_front() {
                    group.push(e);
                }
            }
        }
        self.release_room(group.len() - before);
    }

    /// Passes the token to the oldest waiter, or leaves it idle when nobody waits. A
    /// waiter that is gone cannot take it: its append (if any) comes back, with the
    /// token, for the caller to write.
    fn pass_on(&self, mut writer: Box<Writer>) -> Option<(Box<Writer>, Entry)> {
        loop {
            let next = {
                let mut st = self.lock();
                match st.waiting.pop_front() {
                    Some(next) => next,
                    None => {
                        st.idle = Some(writer);
                        return None;
                    }
                }
            };
            match next {
                Waiting::Append(entry) => {
                    self.release_room(1);
                    let Entry {
                        batches,
                        sync,
                        reply,
                    } = entry;
                    match offer(reply, writer, Some(Promoted { batches, sync })) {
                        Ok(()) => return None,
                        Err((back, Some(p))) => {
                            // Its producer is gone; its append was handed over, so it
                            // is written all the same.
                            let entry = p.into_entry(oneshot::channel().0);
                            return Some((back, entry));
                        }
                        Err((back, None)) => writer = back,
                    }
                }
                Waiting::Turn(reply) => match offer(reply, writer, None) {
                    Ok(()) => return None,
                    Err((back, _)) => writer = back,
                },
            }
        }
    }

    /// Refuses new work; with `Retired` or `Panicked`, fails everything queued too.
    fn close(&self, closed: Closed) {
        let drained: Vec<Waiting> = {
            let mut st = self.lock();
            if matches!(st.closed, Some(Closed::Panicked | Closed::Retired)) {
                return;
            }
            st.closed = Some(closed);
            if closed == Closed::ShuttingDown {
                return;
            }
            st.idle = None;
            st.forming = false;
            st.waiting.drain(..).collect()
        };
        self.room.close();
        for w in drained {
            let error = self.closed_error(closed);
            match w {
                Waiting::Append(entry) => entry.fail(error),
                Waiting::Turn(reply) => {
                    let _ = reply.send(Answer::Done(Err(error)));
                }
            }
        }
    }

    /// Waits for the token, as a maintenance task. `last` (shutdown) may take it after
    /// shutdown started.
    async fn turn(self: &Arc<Self>, last: bool) -> Result<Leadership> {
        let rx = {
            let mut st = self.lock();
            match st.closed {
                Some(Closed::ShuttingDown) if last => {}
                Some(closed) => return Err(self.closed_error(closed)),
                None => {}
            }
            if !st.forming
                && let Some(writer) = st.idle.take()
            {
                return Ok(Leadership::new(self, writer));
            }
            let (tx, rx) = oneshot::channel();
            st.waiting.push_back(Waiting::Turn(tx));
            rx
        };
        match rx.await {
            Ok(Answer::Lead(writer, _)) => Ok(Leadership::new(self, writer)),
            Ok(Answer::Done(Err(e))) => Err(e),
            Ok(Answer::Done(Ok(_))) | Err(_) => Err(self.gone()),
        }
    }

    /// Runs `job` with the token on a spawned task (so a caller that goes away cannot
    /// interrupt it halfway), then passes the token on.
    pub(crate) async fn job<T: Send + 'static>(
        self: &Arc<Self>,
        job: impl for<'a> FnOnce(&'a mut Writer) -> JobFuture<'a, T> + Send + 'static,
    ) -> Result<T> {
        self.spawn_job(false, job).await
    }

    /// Shuts the partition's writing down: appends queued before it are written, later
    /// ones refused; then `job` runs (fsync, indexes) and the token is retired.
    pub(crate) async fn last_job(
        self: &Arc<Self>,
        job: impl for<'a> FnOnce(&'a mut Writer) -> JobFuture<'a, ()> + Send + 'static,
    ) -> Result<()> {
        self.close(Closed::ShuttingDown);
        self.spawn_job(true, job).await
    }

    async fn spawn_job<T: Send + 'static>(
        self: &Arc<Self>,
        last: bool,
        job: impl for<'a> FnOnce(&'a mut Writer) -> JobFuture<'a, T> + Send + 'static,
    ) -> Result<T> {
        let queue = self.clone();
        let task = tokio::spawn(async move {
            let mut lead = queue.turn(last).await?;
            let out = job(lead.writer()).await;
            if last {
                lead.retire();
            } else {
                lead_detoured(&queue, lead, Vec::new()).await;
            }
            out
        });
        match task.await {
            Ok(out) => out,
            // A panic in the job lost the write state (see `Leadership`'s drop).
            Err(_) => Err(self.gone()),
        }
    }

    /// Starts the interval policy's timer: after `delay`, a maintenance task fsyncs
    /// what is still unsynced.
    fn start_interval_timer(self: &Arc<Self>, delay: std::time::Duration) {
        let queue = self.clone();
        spawn_or_drop(async move {
            tokio::time::sleep(delay).await;
            let _ = queue
                .job(|w| {
                    Box::pin(async move {
                        w.on_interval_deadline();
                        Ok(())
                    })
                })
                .await;
        });
    }
}

/// Passes the token (and the waiter's own append) to a waiter; a waiter that is gone
/// gives both back.
fn offer(
    reply: oneshot::Sender<Answer>,
    writer: Box<Writer>,
    promoted: Option<Promoted>,
) -> std::result::Result<(), (Box<Writer>, Option<Promoted>)> {
    match reply.send(Answer::Lead(writer, promoted)) {
        Ok(()) => Ok(()),
        Err(Answer::Lead(writer, promoted)) => Err((writer, promoted)),
        // `send` gives back the value it was given.
        Err(Answer::Done(_)) => unreachable!("a token came back as an answer"),
    }
}

/// Spawns `fut` on the current runtime; without one (the runtime is going away) there is
/// nothing left to run it for.
fn spawn_or_drop(fut: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(fut);
    }
}

/// The token, held. Dropped without being passed on — by a panic, or a maintenance task
/// cancelled with its runtime — it still leaves the queue in order: after a panic the
/// partition is closed (every waiter answered `PartitionPanicked`), else it is passed on.
pub(crate) struct Leadership {
    queue: Arc<WriteQueue>,
    writer: Option<Box<Writer>>,
}

impl Leadership {
    fn new(queue: &Arc<WriteQueue>, writer: Box<Writer>) -> Self {
        Leadership {
            queue: queue.clone(),
            writer: Some(writer),
        }
    }

    fn writer(&mut self) -> &mut Writer {
        match self.writer.as_deref_mut() {
            Some(w) => w,
            // Taken only by the consuming methods below.
            None => unreachable!("a leadership without its writer"),
        }
    }

    fn take(mut self) -> Box<Writer> {
        match self.writer.take() {
            Some(w) => w,
            None => unreachable!("a leadership without its writer"),
        }
    }

    /// Ends writing for good (shutdown done): the token is dropped.
    fn retire(mut self) {
        self.writer = None;
        self.queue.close(Closed::Retired);
    }

    /// The write state is unusable (the storage layer panicked in a write).
    fn lose(mut self) {
        self.writer = None;
        self.queue.close(Closed::Panicked);
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        let Some(writer) = self.writer.take() else {
            return;
        };
        if std::thread::panicking() {
            drop(writer);
            self.queue.close(Closed::Panicked);
        } else {
            lead_here(&self.queue, writer, Vec::new());
        }
    }
}

/// A leader stopped by a detour: the token, the detour, and the appends that wait for it.
struct Stopped {
    lead: Leadership,
    detour: Detour,
    group: Vec<Entry>,
}

/// Leads without waiting: writes `group` (topped up from the queue) and passes the token
/// on, writing the appends of waiters that are gone. Returns the token when a detour is
/// needed.
fn lead_groups(
    queue: &Arc<WriteQueue>,
    mut lead: Leadership,
    mut group: Vec<Entry>,
) -> Option<Stopped> {
    loop {
        if !group.is_empty() {
            queue.top_up(&mut group);
            match lead.writer().write_group(&mut group) {
                GroupOutcome::Done => {}
                GroupOutcome::Needs(detour) => {
                    return Some(Stopped {
                        lead,
                        detour,
                        group,
                    });
                }
                GroupOutcome::StoragePanicked => {
                    lead.lose();
                    return None;
                }
            }
            if let Some(delay) = lead.writer().take_interval_timer() {
                queue.start_interval_timer(delay);
            }
        }
        match queue.pass_on(lead.take()) {
            None => return None,
            Some((writer, orphan)) => {
                lead = Leadership::new(queue, writer);
                group.push(orphan);
            }
        }
    }
}

/// Leads on a producer's task: what needs a detour continues on a maintenance task.
fn lead_here(queue: &Arc<WriteQueue>, writer: Box<Writer>, group: Vec<Entry>) {
    let lead = Leadership::new(queue, writer);
    if let Some(stopped) = lead_groups(queue, lead, group) {
        let queue = queue.clone();
        spawn_or_drop(async move { resume(&queue, stopped).await });
    }
}

/// Leads on a maintenance task, taking detours as they come.
async fn lead_detoured(queue: &Arc<WriteQueue>, lead: Leadership, group: Vec<Entry>) {
    if let Some(stopped) = lead_groups(queue, lead, group) {
        resume(queue, stopped).await;
    }
}

/// Takes the detour a leader stopped for, then leads on. A failed detour fails the
/// append that needed it (a failed roll: the first; a failed seal leaves the partition
/// read-only, which fails the rest).
async fn resume(queue: &Arc<WriteQueue>, stopped: Stopped) {
    let mut stopped = stopped;
    loop {
        let Stopped {
            mut lead,
            detour,
            mut group,
        } = stopped;
        if let Err(e) = lead.writer().run_detour(detour).await
            && !group.is_empty()
        {
            group.remove(0).fail(e);
        }
        match lead_groups(queue, lead, group) {
            None => return,
            Some(next) => stopped = next,
        }
    }
}

/// Waits for an append's answer. Passed the token meanwhile, it leads (without waiting)
/// and then waits for its own answer. Dropped while holding an unread token, it leads
/// in its drop, so the appends behind it are never stranded.
pub(crate) struct AppendWait {
    queue: Arc<WriteQueue>,
    rx: Option<oneshot::Receiver<Answer>>,
    /// This producer holds a group's forming turn (see `WriteQueue::hand_over`).
    forming: bool,
}

impl AppendWait {
    pub(crate) fn new(
        queue: Arc<WriteQueue>,
        rx: oneshot::Receiver<Answer>,
        forming: bool,
    ) -> Self {
        AppendWait {
            queue,
            rx: Some(rx),
            forming,
        }
    }

    /// The append's base offset, or why it was not written.
    pub(crate) async fn answer(mut self) -> Result<u64> {
        if self.forming {
            requeue().await;
            self.forming = false;
            self.queue.finish_forming();
        }
        loop {
            let Some(rx) = self.rx.as_mut() else {
                return Err(self.queue.gone());
            };
            match rx.await {
                Ok(Answer::Done(result)) => {
                    self.rx = None;
                    return result;
                }
                Ok(Answer::Lead(writer, promoted)) => {
                    let (reply, rx) = oneshot::channel();
                    self.rx = Some(rx);
                    let group = promoted.map(|p| p.into_entry(reply)).into_iter().collect();
                    lead_here(&self.queue, writer, group);
                }
                Err(_) => {
                    self.rx = None;
                    return Err(self.queue.gone());
                }
            }
        }
    }
}

impl Drop for AppendWait {
    fn drop(&mut self) {
        if self.forming {
            // Dropped during its forming turn: it leads now, so the group is not stranded.
            self.queue.finish_forming();
        }
        let Some(mut rx) = self.rx.take() else {
            return;
        };
        // After `close`, a token can no longer arrive unseen: one sent before is read
        // here, one sent after comes back to its sender.
        rx.close();
        if let Ok(Answer::Lead(writer, promoted)) = rx.try_recv() {
            let group = promoted
                .map(|p| p.into_entry(oneshot::channel().0))
                .into_iter()
                .collect();
            lead_here(&self.queue, writer, group);
        }
    }
}

/// Puts the running task at the back of its worker's run queue once, so tasks already
/// runnable there (producers woken by the last group's answers) run, and send, first.
/// Unlike `tokio::task::yield_now`, which defers the task until the worker would park
/// (an extra `epoll_wait` per yield), this re-queues it directly.
async fn requeue() {
    let mut done = false;
    std::future::poll_fn(|cx| {
        if done {
            std::task::Poll::Ready(())
        } else {
            done = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
}
