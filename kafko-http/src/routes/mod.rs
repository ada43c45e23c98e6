//! Route handlers, one file per resource: `topics`, `records` (produce, fetch, single
//! record, streams), `admin`, `health`.

pub(crate) mod admin;
pub(crate) mod health;
pub(crate) mod records;
pub(crate) mod topics;
