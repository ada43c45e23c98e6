//! The server-wide budget of memory that record answers may hold (`--max-answer-buffer-bytes`).
//!
//! A fetch, a group poll or a REST Proxy records read builds its answer in memory, and
//! a client that does not read keeps it there. Each such answer holds a [`Reservation`]
//! of the budget from before it reads the log (an upper bound of the records and their
//! framing) until its body was sent whole or dropped, shrunk to the bytes the answer
//! holds once it is built: what is booked is what is sent, not an allowance per listed
//! entry. A read that finds no room within a short wait is refused (503 `overloaded`
//! with `Retry-After`; the REST Proxy's 429) and holds nothing.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget counts kibibytes: a permit is 1 KiB.
const UNIT: usize = 1024;
/// How long a read waits for room before it is refused.
const WAIT: Duration = Duration::from_millis(500);

/// The bytes that answers built in memory may hold together.
pub struct AnswerBudget {
    room: Arc<Semaphore>,
    /// The whole budget, in units.
    units: u32,
}

impl AnswerBudget {
    /// A budget of `bytes` (at least one unit).
    pub fn new(bytes: usize) -> Self {
        let units =
            u32::try_from((bytes / UNIT).clamp(1, Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
        AnswerBudget {
            room: Arc::new(Semaphore::new(units as usize)),
            units,
        }
    }

    /// Units for `bytes`, at most the whole budget (an answer larger than the budget
    /// waits until nothing else holds any).
    fn units_for(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .clamp(1, self.units)
    }

    /// Reserves room for an answer of about `bytes`, waiting a little for it; `None`
    /// when the budget stays full (the caller refuses the read).
    pub async fn reserve(&self, bytes: usize) -> Option<Reservation> {
        let units = self.units_for(bytes);
        let permit = tokio::time::timeout(WAIT, self.room.clone().acquire_many_owned(units))
            .await
            .ok()?
            .ok()?;
        Some(Reservation { permit })
    }

    /// Reserves room for an answer of about `bytes` if it is free now; `None` otherwise.
    pub fn try_reserve(&self, bytes: usize) -> Option<Reservation> {
        let units = self.units_for(bytes);
        let permit = self.room.clone().try_acquire_many_owned(units).ok()?;
        Some(Reservation { permit })
    }

    /// Units free now (tests and metrics).
    #[cfg(test)]
    fn free(&self) -> usize {
        self.room.available_permits()
    }
}

/// Room held in the [`AnswerBudget`] until dropped.
pub struct Reservation {
    permit: OwnedSemaphorePermit,
}

impl Reservation {
    /// Adjusts the reservation to an answer of `bytes`, now built: the excess goes back;
    /// an answer larger than the estimate (a single record past `max_bytes`) waits a
    /// little for the rest. `false` when that room does not come (refuse the answer).
    pub async fn fit(&mut self, budget: &AnswerBudget, bytes: usize) -> bool {
        let want = budget.units_for(bytes) as usize;
        let held = self.permit.num_permits();
        if want < held {
            drop(self.permit.split(held - want));
            return true;
        }
        if want == held {
            return true;
        }
        let more = u32::try_from(want - held).unwrap_or(u32::MAX);
        match tokio::time::timeout(WAIT, budget.room.clone().acquire_many_owned(more)).await {
            Ok(Ok(extra)) => {
                self.permit.merge(extra);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reservations_fit_the_answer_and_return_on_drop() {
        let budget = AnswerBudget::new(10 * UNIT);
        let mut a = budget.reserve(6 * UNIT).await.unwrap();
        assert_eq!(budget.free(), 4);
        assert!(a.fit(&budget, 2 * UNIT).await);
        assert_eq!(budget.free(), 8);
        let b = budget.reserve(8 * UNIT).await.unwrap();
        // Full: a third read waits, then is refused.
        assert!(budget.reserve(UNIT).await.is_none());
        drop(b);
        // Larger than the whole budget: waits for all of it.
        drop(a);
        let all = budget.reserve(100 * UNIT).await.unwrap();
        assert_eq!(budget.free(), 0);
        drop(all);
        assert_eq!(budget.free(), 10);
    }
}
