//! [`Waiter`]: the one wait of every front end's long-poll (`/v1` fetches and group
//! polls, REST Proxy consumer reads, Kafka Fetch). A read looks; when it finds too
//! little it waits for a signal of the topics it reads ([`ActivityWatch`], taken before
//! the look so nothing in between is lost), its deadline or the server's shutdown,
//! whichever comes first, then looks again. From its first wait until it is dropped the
//! read counts in the `kafko_reads_waiting` gauge of its front end, which tests wait on
//! before they write.

use std::future::Future;

use kafko_core::ActivityWatch;
use tokio::time::Instant;

use crate::Service;
use crate::metrics::{FrontEnd, Waiting};

/// One read's waits, up to one deadline.
pub struct Waiter<'a> {
    service: &'a Service,
    front_end: FrontEnd,
    deadline: Instant,
    /// Held from the first wait on: the read counts as waiting.
    counted: Option<Waiting>,
}

impl<'a> Waiter<'a> {
    /// The waits of one read of `front_end`, until `deadline`.
    pub fn new(service: &'a Service, front_end: FrontEnd, deadline: Instant) -> Self {
        Waiter {
            service,
            front_end,
            deadline,
            counted: None,
        }
    }

    /// Whether waiting more is over: the deadline has passed or shutdown has begun.
    pub fn over(&self) -> bool {
        Instant::now() >= self.deadline || self.service.is_shutting_down()
    }

    /// Waits for a signal of `watch`, the deadline or shutdown; `true` when `watch`
    /// signalled.
    pub async fn wait(&mut self, watch: &mut ActivityWatch) -> bool {
        self.until(watch.signalled()).await.is_some()
    }

    /// Runs `wait` (a wait of the core's) until it ends, the deadline passes or shutdown
    /// begins; its output, or `None` when the deadline or shutdown came first.
    pub async fn until<T>(&mut self, wait: impl Future<Output = T>) -> Option<T> {
        let (service, front_end) = (self.service, self.front_end);
        self.counted
            .get_or_insert_with(|| service.metrics.read_waiting(front_end));
        tokio::select! {
            out = wait => Some(out),
            () = tokio::time::sleep_until(self.deadline) => None,
            () = service.shutdown_requested() => None,
        }
    }
}
