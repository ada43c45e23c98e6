//! The body layouts of the requests this broker decodes, field by field as the
//! message codec reads them (which versions carry each field), for the guard that bounds
//! a body's arrays before decoding. Each served API names its layout in `apis`.

/// What a field is on the wire.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ty {
    /// A fixed-size value (integers, booleans, UUIDs) of this many bytes.
    Fixed(usize),
    /// A (nullable) string.
    Str,
    /// (Nullable) bytes.
    Bytes,
    /// A (nullable) array of structures with these fields.
    Array(&'static [Field]),
    /// A (nullable) array of fixed-size values of this many bytes.
    Fixeds(usize),
    /// A (nullable) array of strings.
    Strs,
}

/// A field, present in versions `since..=until`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field {
    pub(super) ty: Ty,
    pub(super) since: i16,
    pub(super) until: i16,
}

const fn all(ty: Ty) -> Field {
    Field {
        ty,
        since: 0,
        until: i16::MAX,
    }
}

const fn since(version: i16, ty: Ty) -> Field {
    Field {
        ty,
        since: version,
        until: i16::MAX,
    }
}

const fn until(version: i16, ty: Ty) -> Field {
    Field {
        ty,
        since: 0,
        until: version,
    }
}

const fn between(from: i16, to: i16, ty: Ty) -> Field {
    Field {
        ty,
        since: from,
        until: to,
    }
}

const I8: Ty = Ty::Fixed(1);
const BOOL: Ty = Ty::Fixed(1);
const I16: Ty = Ty::Fixed(2);
const I32: Ty = Ty::Fixed(4);
const I64: Ty = Ty::Fixed(8);
const UUID: Ty = Ty::Fixed(16);

const PRODUCE_PARTITION: &[Field] = &[all(I32), all(Ty::Bytes)];
const PRODUCE_TOPIC: &[Field] = &[
    until(12, Ty::Str),
    since(13, UUID),
    all(Ty::Array(PRODUCE_PARTITION)),
];
pub(super) const PRODUCE: &[Field] = &[
    all(Ty::Str),
    all(I16),
    all(I32),
    all(Ty::Array(PRODUCE_TOPIC)),
];

const FETCH_PARTITION: &[Field] = &[
    all(I32),
    since(9, I32),
    all(I64),
    since(12, I32),
    since(5, I64),
    all(I32),
];
const FETCH_TOPIC: &[Field] = &[
    until(12, Ty::Str),
    since(13, UUID),
    all(Ty::Array(FETCH_PARTITION)),
];
const FORGOTTEN_TOPIC: &[Field] = &[until(12, Ty::Str), since(13, UUID), all(Ty::Fixeds(4))];
pub(super) const FETCH: &[Field] = &[
    until(14, I32),
    all(I32),
    all(I32),
    since(3, I32),
    since(4, I8),
    since(7, I32),
    since(7, I32),
    all(Ty::Array(FETCH_TOPIC)),
    since(7, Ty::Array(FORGOTTEN_TOPIC)),
    since(11, Ty::Str),
];

const LIST_OFFSETS_PARTITION: &[Field] = &[all(I32), since(4, I32), all(I64), until(0, I32)];
const LIST_OFFSETS_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Array(LIST_OFFSETS_PARTITION))];
pub(super) const LIST_OFFSETS: &[Field] = &[
    all(I32),
    since(2, I8),
    all(Ty::Array(LIST_OFFSETS_TOPIC)),
    since(10, I32),
];

const METADATA_TOPIC: &[Field] = &[since(10, UUID), all(Ty::Str)];
pub(super) const METADATA: &[Field] = &[
    all(Ty::Array(METADATA_TOPIC)),
    since(4, BOOL),
    between(8, 10, BOOL),
    since(8, BOOL),
];

const COMMIT_PARTITION: &[Field] = &[
    all(I32),
    all(I64),
    since(6, I32),
    between(1, 1, I64),
    all(Ty::Str),
];
const COMMIT_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Array(COMMIT_PARTITION))];
pub(super) const OFFSET_COMMIT: &[Field] = &[
    all(Ty::Str),
    since(1, I32),
    since(1, Ty::Str),
    since(7, Ty::Str),
    between(2, 4, I64),
    all(Ty::Array(COMMIT_TOPIC)),
];

const OFFSET_FETCH_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Fixeds(4))];
const OFFSET_FETCH_GROUP: &[Field] = &[
    all(Ty::Str),
    since(9, Ty::Str),
    since(9, I32),
    all(Ty::Array(OFFSET_FETCH_TOPIC)),
];
pub(super) const OFFSET_FETCH: &[Field] = &[
    until(7, Ty::Str),
    until(7, Ty::Array(OFFSET_FETCH_TOPIC)),
    since(8, Ty::Array(OFFSET_FETCH_GROUP)),
    since(7, BOOL),
];

pub(super) const FIND_COORDINATOR: &[Field] =
    &[until(3, Ty::Str), since(1, I8), since(4, Ty::Strs)];

const JOIN_PROTOCOL: &[Field] = &[all(Ty::Str), all(Ty::Bytes)];
pub(super) const JOIN_GROUP: &[Field] = &[
    all(Ty::Str),
    all(I32),
    since(1, I32),
    all(Ty::Str),
    since(5, Ty::Str),
    all(Ty::Str),
    all(Ty::Array(JOIN_PROTOCOL)),
    since(8, Ty::Str),
];

const SYNC_ASSIGNMENT: &[Field] = &[all(Ty::Str), all(Ty::Bytes)];
pub(super) const SYNC_GROUP: &[Field] = &[
    all(Ty::Str),
    all(I32),
    all(Ty::Str),
    since(3, Ty::Str),
    since(5, Ty::Str),
    since(5, Ty::Str),
    all(Ty::Array(SYNC_ASSIGNMENT)),
];

pub(super) const HEARTBEAT: &[Field] = &[all(Ty::Str), all(I32), all(Ty::Str), since(3, Ty::Str)];

const LEAVE_MEMBER: &[Field] = &[all(Ty::Str), all(Ty::Str), since(5, Ty::Str)];
pub(super) const LEAVE_GROUP: &[Field] = &[
    all(Ty::Str),
    until(2, Ty::Str),
    since(3, Ty::Array(LEAVE_MEMBER)),
];

pub(super) const DESCRIBE_GROUPS: &[Field] = &[all(Ty::Strs), since(3, BOOL)];
pub(super) const LIST_GROUPS: &[Field] = &[since(4, Ty::Strs), since(5, Ty::Strs)];
const CGH_TOPIC: &[Field] = &[all(UUID), all(Ty::Fixeds(4))];
pub(super) const CONSUMER_GROUP_HEARTBEAT: &[Field] = &[
    all(Ty::Str),
    all(Ty::Str),
    all(I32),
    all(Ty::Str),
    all(Ty::Str),
    all(I32),
    all(Ty::Strs),
    since(1, Ty::Str),
    all(Ty::Str),
    all(Ty::Array(CGH_TOPIC)),
];
pub(super) const CONSUMER_GROUP_DESCRIBE: &[Field] = &[all(Ty::Strs), all(BOOL)];
pub(super) const API_VERSIONS: &[Field] = &[since(3, Ty::Str), since(3, Ty::Str)];

const CREATE_ASSIGNMENT: &[Field] = &[all(I32), all(Ty::Fixeds(4))];
const CREATE_CONFIG: &[Field] = &[all(Ty::Str), all(Ty::Str)];
const CREATE_TOPIC: &[Field] = &[
    all(Ty::Str),
    all(I32),
    all(I16),
    all(Ty::Array(CREATE_ASSIGNMENT)),
    all(Ty::Array(CREATE_CONFIG)),
];
pub(super) const CREATE_TOPICS: &[Field] =
    &[all(Ty::Array(CREATE_TOPIC)), all(I32), since(1, BOOL)];

const DELETE_TOPIC: &[Field] = &[all(Ty::Str), all(UUID)];
pub(super) const DELETE_TOPICS: &[Field] = &[
    since(6, Ty::Array(DELETE_TOPIC)),
    until(5, Ty::Strs),
    all(I32),
];

const DESCRIBE_CONFIGS_RESOURCE: &[Field] = &[all(I8), all(Ty::Str), all(Ty::Strs)];
pub(super) const DESCRIBE_CONFIGS: &[Field] = &[
    all(Ty::Array(DESCRIBE_CONFIGS_RESOURCE)),
    since(1, BOOL),
    since(3, BOOL),
];

const ALTER_CONFIG: &[Field] = &[all(Ty::Str), all(Ty::Str)];
const ALTER_CONFIGS_RESOURCE: &[Field] = &[all(I8), all(Ty::Str), all(Ty::Array(ALTER_CONFIG))];
pub(super) const ALTER_CONFIGS: &[Field] = &[all(Ty::Array(ALTER_CONFIGS_RESOURCE)), all(BOOL)];

const INCREMENTAL_CONFIG: &[Field] = &[all(Ty::Str), all(I8), all(Ty::Str)];
const INCREMENTAL_RESOURCE: &[Field] = &[all(I8), all(Ty::Str), all(Ty::Array(INCREMENTAL_CONFIG))];
pub(super) const INCREMENTAL_ALTER_CONFIGS: &[Field] =
    &[all(Ty::Array(INCREMENTAL_RESOURCE)), all(BOOL)];

pub(super) const DELETE_GROUPS: &[Field] = &[all(Ty::Strs)];
pub(super) const DESCRIBE_CLUSTER: &[Field] = &[all(BOOL), since(1, I8), since(2, BOOL)];
pub(super) const DESCRIBE_ACLS: &[Field] = &[
    all(I8),
    all(Ty::Str),
    since(1, I8),
    all(Ty::Str),
    all(Ty::Str),
    all(I8),
    all(I8),
];

const DELETE_RECORDS_PARTITION: &[Field] = &[all(I32), all(I64)];
const DELETE_RECORDS_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Array(DELETE_RECORDS_PARTITION))];
pub(super) const DELETE_RECORDS: &[Field] = &[all(Ty::Array(DELETE_RECORDS_TOPIC)), all(I32)];

const CREATE_PARTITIONS_ASSIGNMENT: &[Field] = &[all(Ty::Fixeds(4))];
const CREATE_PARTITIONS_TOPIC: &[Field] = &[
    all(Ty::Str),
    all(I32),
    all(Ty::Array(CREATE_PARTITIONS_ASSIGNMENT)),
];
pub(super) const CREATE_PARTITIONS: &[Field] =
    &[all(Ty::Array(CREATE_PARTITIONS_TOPIC)), all(I32), all(BOOL)];

const LOG_DIRS_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Fixeds(4))];
pub(super) const DESCRIBE_LOG_DIRS: &[Field] = &[all(Ty::Array(LOG_DIRS_TOPIC))];

const OFFSET_DELETE_PARTITION: &[Field] = &[all(I32)];
const OFFSET_DELETE_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Array(OFFSET_DELETE_PARTITION))];
pub(super) const OFFSET_DELETE: &[Field] = &[all(Ty::Str), all(Ty::Array(OFFSET_DELETE_TOPIC))];

const PRODUCERS_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Fixeds(4))];
pub(super) const DESCRIBE_PRODUCERS: &[Field] = &[all(Ty::Array(PRODUCERS_TOPIC))];

pub(super) const INIT_PRODUCER_ID: &[Field] =
    &[all(Ty::Str), all(I32), since(3, I64), since(3, I16)];
pub(super) const SASL_HANDSHAKE: &[Field] = &[all(Ty::Str)];
pub(super) const SASL_AUTHENTICATE: &[Field] = &[all(Ty::Bytes)];

const TXN_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Fixeds(4))];
const TXN_TRANSACTION: &[Field] = &[
    all(Ty::Str),
    all(I64),
    all(I16),
    all(BOOL),
    all(Ty::Array(TXN_TOPIC)),
];
pub(super) const ADD_PARTITIONS_TO_TXN: &[Field] = &[
    since(4, Ty::Array(TXN_TRANSACTION)),
    until(3, Ty::Str),
    until(3, I64),
    until(3, I16),
    until(3, Ty::Array(TXN_TOPIC)),
];
pub(super) const ADD_OFFSETS_TO_TXN: &[Field] = &[all(Ty::Str), all(I64), all(I16), all(Ty::Str)];
const TXN_COMMIT_PARTITION: &[Field] = &[all(I32), all(I64), since(2, I32), all(Ty::Str)];
const TXN_COMMIT_TOPIC: &[Field] = &[all(Ty::Str), all(Ty::Array(TXN_COMMIT_PARTITION))];
pub(super) const TXN_OFFSET_COMMIT: &[Field] = &[
    all(Ty::Str),
    all(Ty::Str),
    all(I64),
    all(I16),
    since(3, I32),
    since(3, Ty::Str),
    since(3, Ty::Str),
    all(Ty::Array(TXN_COMMIT_TOPIC)),
];
pub(super) const END_TXN: &[Field] = &[all(Ty::Str), all(I64), all(I16), all(BOOL)];
pub(super) const DESCRIBE_TRANSACTIONS: &[Field] = &[all(Ty::Strs)];
pub(super) const LIST_TRANSACTIONS: &[Field] = &[all(Ty::Strs), all(Ty::Fixeds(8)), since(1, I64)];
