//! [`Problem`]: the body of every error (RFC 9457), with the extension members some
//! codes add, each declared with its type so that generated clients parse them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// A problem (RFC 9457), the body of every error. Members after `code` are present only
/// with the codes that name them.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Problem {
    /// URI naming the problem type (`urn:kafko:problem:<code>`).
    #[serde(rename = "type")]
    r#type: String,
    title: String,
    status: u16,
    detail: String,
    /// Stable machine-readable code (`topic_not_found`, `offset_out_of_range`, …).
    code: String,
    // The extension members, by the codes that carry them.
    /// `offset_out_of_range`: the offset asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    requested: Option<u64>,
    /// `offset_out_of_range`: the first offset still stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    log_start_offset: Option<u64>,
    /// `offset_out_of_range`: one past the last offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    high_watermark: Option<u64>,
    /// `not_representable`: the record that does not fit the format.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    offset: Option<u64>,
    /// `not_assigned`, `no_valid_offset`: the partition concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    partition: Option<u32>,
    /// `unknown_member`: the member id that is not (or no longer) in the group.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    member_id: Option<String>,
    /// `stale_generation`: the group's current generation (rejoin to get it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    generation: Option<u64>,
    /// `stale_generation`: the generation the request carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    given_generation: Option<u64>,
    /// `group_has_members`: how many members are joined.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    members: Option<u64>,
    /// `payload_too_large`: the server's body limit in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    max_body_bytes: Option<u64>,
    /// `too_many_records`: the server's limit of records in one produce request.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    max_records_per_request: Option<u64>,
    /// `invalid_key`: the parameter to use instead (`key_base64` for binary keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    parameter: Option<String>,
    /// `limit_reached`: what is limited (`topics`, `partitions` or `groups`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    resource: Option<String>,
    /// `limit_reached`: the server's limit on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    limit: Option<u64>,
}

impl Problem {
    /// The problem for an error; `members` are the extension members it adds, each one
    /// declared above.
    pub(crate) fn new(
        status: u16,
        title: &str,
        code: &str,
        detail: String,
        members: Map<String, Value>,
    ) -> Self {
        let base = Problem {
            r#type: format!("urn:kafko:problem:{code}"),
            title: title.to_owned(),
            status,
            detail,
            code: code.to_owned(),
            requested: None,
            log_start_offset: None,
            high_watermark: None,
            offset: None,
            partition: None,
            member_id: None,
            generation: None,
            given_generation: None,
            members: None,
            max_body_bytes: None,
            max_records_per_request: None,
            parameter: None,
            resource: None,
            limit: None,
        };
        if members.is_empty() {
            return base;
        }
        let Ok(Value::Object(mut all)) = serde_json::to_value(&base) else {
            return base;
        };
        all.extend(members);
        match serde_json::from_value(Value::Object(all)) {
            Ok(problem) => problem,
            Err(e) => {
                // Every member an error adds is declared above with its type (the OpenAPI
                // document is generated from it); tests and fuzzers run debug builds.
                debug_assert!(false, "undeclared problem member for {code}: {e}");
                tracing::error!(code, error = %e, "dropping undeclared problem members");
                base
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn members_keep_their_names_and_values() {
        let mut members = Map::new();
        members.insert("generation".into(), json!(4));
        members.insert("given_generation".into(), json!(3));
        let p = Problem::new(409, "Conflict", "stale_generation", "d".into(), members);
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"type": "urn:kafko:problem:stale_generation", "title": "Conflict",
                "status": 409, "detail": "d", "code": "stale_generation",
                "generation": 4, "given_generation": 3})
        );
    }

    #[test]
    #[should_panic(expected = "undeclared problem member")]
    fn an_undeclared_member_is_caught_in_debug_builds() {
        let mut members = Map::new();
        members.insert("surprise".into(), json!(1));
        Problem::new(400, "Bad Request", "invalid_request", "d".into(), members);
    }
}
