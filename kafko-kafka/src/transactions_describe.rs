//! DescribeTransactions and ListTransactions, from the transaction coordinator's
//! descriptions.
//!
//! Bounds: a DescribeTransactions names at most [`MAX_DESCRIBED`] distinct ids (a
//! request past it closes the connection, as a FindCoordinator of too many keys does);
//! each id is answered once. A ListTransactions answer lists at most [`MAX_LISTED`]
//! transactions, in the order of their ids (the coordinator's own bound on the ids it
//! keeps is lower by default).

use std::collections::HashSet;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::list_transactions_response::TransactionState as Listed;
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
    ListTransactionsResponse, ProducerId, TopicName, TransactionalId,
};
use kafko_core::transaction::{TransactionDescription, TxnState};

use crate::metadata::str;
use crate::{ListenerState, errors};

/// Distinct transactional ids one DescribeTransactions may name.
pub(crate) const MAX_DESCRIBED: usize = 10_000;
/// Transactions one ListTransactions answer lists at most.
pub(crate) const MAX_LISTED: usize = 10_000;

/// Answers DescribeTransactions: each id named, once, with its state, producer,
/// timeout, start and partitions (grouped by topic); TRANSACTIONAL_ID_NOT_FOUND for an
/// id the coordinator does not know.
///
/// # Errors
/// The request names more than [`MAX_DESCRIBED`] distinct ids.
pub(crate) fn describe_transactions(
    broker: &ListenerState,
    request: DescribeTransactionsRequest,
) -> Result<DescribeTransactionsResponse, String> {
    let mut response = DescribeTransactionsResponse::default();
    let mut seen: HashSet<TransactionalId> = HashSet::new();
    for id in request.transactional_ids {
        if seen.contains(&id) {
            continue;
        }
        if seen.len() >= MAX_DESCRIBED {
            return Err(format!(
                "a DescribeTransactions of more than {MAX_DESCRIBED} ids"
            ));
        }
        seen.insert(id.clone());
        let state = match broker.service.kafko.describe_transaction(id.as_str()) {
            Some(description) => described(description),
            None => {
                let mut state = TransactionState::default();
                state.error_code = errors::TRANSACTIONAL_ID_NOT_FOUND;
                state.transaction_state = str("");
                state.producer_id = ProducerId(-1);
                state.producer_epoch = -1;
                state.transaction_start_time_ms = -1;
                state
            }
        };
        let mut state = state;
        state.transactional_id = id;
        response.transaction_states.push(state);
    }
    Ok(response)
}

/// One transaction as DescribeTransactions shows it.
fn described(d: TransactionDescription) -> TransactionState {
    let mut state = TransactionState::default();
    state.transaction_state = str(d.state.kafka_name());
    state.transaction_timeout_ms = d.timeout_ms;
    state.transaction_start_time_ms = d.start_ms;
    state.producer_id = ProducerId(d.producer_id);
    state.producer_epoch = d.producer_epoch;
    // Grouped by topic, in the order first named.
    let mut topics: Vec<TopicData> = Vec::new();
    for p in d.partitions {
        let partition = i32::try_from(p.partition).unwrap_or(i32::MAX);
        match topics.iter_mut().find(|t| t.topic.as_str() == p.topic) {
            Some(t) => t.partitions.push(partition),
            None => {
                let mut t = TopicData::default();
                t.topic = TopicName(str(&p.topic));
                t.partitions.push(partition);
                topics.push(t);
            }
        }
    }
    state.topics = topics;
    state
}

/// Answers ListTransactions: the transactions in the states asked (all when none),
/// of the producer ids asked (all when none), and (v1) running for longer than the
/// duration asked (all when negative). States Kafka does not name are answered back as
/// unknown.
pub(crate) fn list_transactions(
    broker: &ListenerState,
    request: &ListTransactionsRequest,
    version: i16,
) -> ListTransactionsResponse {
    let mut response = ListTransactionsResponse::default();
    let mut states: Vec<TxnState> = Vec::new();
    for name in &request.state_filters {
        match TxnState::from_kafka_name(name.as_str()) {
            Some(s) => states.push(s),
            None => response.unknown_state_filters.push(name.clone()),
        }
    }
    if !request.state_filters.is_empty() && states.is_empty() {
        // Only unknown states: nothing matches.
        return response;
    }
    let producers: HashSet<i64> = request.producer_id_filters.iter().map(|p| p.0).collect();
    let longer_than =
        (version >= 1 && request.duration_filter >= 0).then_some(request.duration_filter);
    let now_ms = now_ms();
    let mut all = broker.service.kafko.list_transactions();
    all.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
    for d in all {
        if !(states.is_empty() || states.contains(&d.state)) {
            continue;
        }
        if !(producers.is_empty() || producers.contains(&d.producer_id)) {
            continue;
        }
        if let Some(duration) = longer_than
            && (d.start_ms < 0 || now_ms.saturating_sub(d.start_ms) <= duration)
        {
            continue;
        }
        if response.transaction_states.len() >= MAX_LISTED {
            break;
        }
        let mut listed = Listed::default();
        listed.transactional_id = TransactionalId(str(&d.transactional_id));
        listed.producer_id = ProducerId(d.producer_id);
        listed.transaction_state = str(d.state.kafka_name());
        response.transaction_states.push(listed);
    }
    response
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
