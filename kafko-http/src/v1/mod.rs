//! `/v1`'s handlers, one file per resource: `topics`, `records` (produce, fetch, single
//! record, streams), `groups` (consumer groups), `admin`, `health`;
//! `ui`, the embedded web console.

pub(crate) mod admin;
pub(crate) mod groups;
pub(crate) mod health;
pub(crate) mod records;
pub(crate) mod topics;
pub(crate) mod ui;
