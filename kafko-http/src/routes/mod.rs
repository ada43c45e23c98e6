//! Route handlers, one file per resource: `topics`, `records` (produce, fetch, single
//! record, streams), `groups` (consumer groups), `admin`, `health`.

pub(crate) mod admin;
pub(crate) mod groups;
pub(crate) mod health;
pub(crate) mod records;
pub(crate) mod topics;
