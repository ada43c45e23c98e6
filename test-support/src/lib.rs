//! Test helpers shared by kafko-core's and kafko's integration tests (never a
//! dependency of a shipped crate): storage layers over the real filesystem that inject
//! faults or hold operations at a gate (`interposed`, `faulty`, `failing_appends`,
//! `gate`), readers of the on-disk files (`on_disk`) and of a log (`reads`), and
//! transactional batches and markers written through the core (`transactions`).
// Test code: helpers are documented where their use is not obvious from the name.
#![allow(missing_docs, unreachable_pub)]
// Test code panics on a broken precondition rather than threading errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod failing_appends;
pub mod faulty;
pub mod gate;
pub mod interposed;
pub mod on_disk;
pub mod reads;
pub mod transactions;
