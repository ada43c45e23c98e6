//! A wire-compatible subset of Confluent's Kafka REST Proxy API, served beside `/v1`
//! (no path collides): clients written for REST Proxy + Kafka run against kafko.
//!
//! - `v2/`: metadata (`/topics`, `/brokers`), produce (`POST /topics/{t}[/partitions/{p}]`)
//!   and consumer instances (`/consumers/{group}/instances/{name}/…`), with the
//!   `application/vnd.kafka.*.v2+json` media types (`content_type`).
//! - `v3/`: one cluster (`/v3/clusters/{id}`), its topics and partitions, topic
//!   creation and deletion, and the streaming produce `POST …/topics/{t}/records`.
//! - `error`: the proxy's `{"error_code","message"}` bodies and codes.
//! - `group_adapter`: consumer instances as kafko group members (the only use of the
//!   group API here).
//!
//! Keys route exactly as on `/v1`: every produce goes through the topic's producer.

pub(crate) mod api_doc;
pub(crate) mod content_type;
pub(crate) mod error;
pub(crate) mod group_adapter;
pub(crate) mod timestamp;
pub(crate) mod v2;
pub(crate) mod v3;

use axum::Router;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::routing::{MethodRouter, delete, get, post};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::error::Category;

use crate::state::AppState;
use error::ProxyError;

pub(crate) use v2::instances::Instances;

/// Every REST Proxy route, to merge into the application router.
/// The REST Proxy's routes; its consumer instances live in a registry the routes carry
/// as a request extension (`instance_timeout`: how long an idle one lives).
pub(crate) fn routes(instance_timeout: std::time::Duration) -> Router<AppState> {
    let registry = std::sync::Arc::new(Instances::new(instance_timeout));
    Router::new()
        .merge(v2_routes())
        .merge(consumer_routes().layer(axum::Extension(registry)))
        .merge(v3_routes())
}

/// v2 metadata and produce.
fn v2_routes() -> Router<AppState> {
    use v2::{metadata, produce};
    under(
        "/topics",
        vec![
            ("", get(metadata::list_topics)),
            (
                "/{topic}",
                get(metadata::get_topic).post(produce::produce_to_topic),
            ),
            ("/{topic}/partitions", get(metadata::list_partitions)),
            (
                "/{topic}/partitions/{partition}",
                get(metadata::get_partition).post(produce::produce_to_partition),
            ),
            (
                "/{topic}/partitions/{partition}/offsets",
                get(metadata::partition_offsets),
            ),
        ],
    )
    .route("/brokers", get(metadata::brokers))
}

/// v2 consumer instances.
fn consumer_routes() -> Router<AppState> {
    use v2::consumers::{assignments, lifecycle, offsets, positions, records, subscription};
    under(
        "/consumers/{group}/instances/{instance}",
        vec![
            ("", delete(lifecycle::delete)),
            (
                "/subscription",
                post(subscription::subscribe)
                    .get(subscription::subscription)
                    .delete(subscription::unsubscribe),
            ),
            ("/records", get(records::records)),
            ("/offsets", post(offsets::commit).get(offsets::committed)),
            (
                "/assignments",
                get(assignments::assignments).post(assignments::assign),
            ),
            ("/positions", post(positions::seek)),
            ("/positions/beginning", post(positions::seek_to_beginning)),
            ("/positions/end", post(positions::seek_to_end)),
        ],
    )
    .route("/consumers/{group}", post(lifecycle::create))
}

/// v3: the cluster, its topics and partitions, produce.
fn v3_routes() -> Router<AppState> {
    use v3::{metadata, produce};
    under(
        "/v3/clusters",
        vec![
            ("", get(metadata::list_clusters)),
            ("/{cluster}", get(metadata::get_cluster)),
            (
                "/{cluster}/topics",
                get(metadata::list_topics).post(metadata::create_topic),
            ),
            (
                "/{cluster}/topics/{topic}",
                get(metadata::get_topic).delete(metadata::delete_topic),
            ),
            (
                "/{cluster}/topics/{topic}/partitions",
                get(metadata::list_partitions),
            ),
            (
                "/{cluster}/topics/{topic}/partitions/{partition}",
                get(metadata::get_partition),
            ),
            (
                "/{cluster}/topics/{topic}/partitions/{partition}/offset",
                get(metadata::partition_offset),
            ),
            ("/{cluster}/topics/{topic}/records", post(produce::produce)),
        ],
    )
}

/// A router of `routes`, each path under `prefix`.
fn under(prefix: &str, routes: Vec<(&str, MethodRouter<AppState>)>) -> Router<AppState> {
    routes
        .into_iter()
        .fold(Router::new(), |router, (path, methods)| {
            router.route(&format!("{prefix}{path}"), methods)
        })
}

/// Whether `req` is a consumer instance's records read that may wait for records
/// (`GET …/records` without `timeout=0`): it runs under the server's limit of waiting
/// requests, as `/v1`'s long-polls do.
pub(crate) fn is_waiting_read(req: &Request) -> bool {
    let path = req.uri().path();
    req.method() == axum::http::Method::GET
        && path.starts_with("/consumers/")
        && path.ends_with("/records")
        && !req.uri().query().is_some_and(|query| {
            query
                .split('&')
                .any(|pair| pair.strip_prefix("timeout=") == Some("0"))
        })
}

/// The REST Proxy routes in the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(
        v2::metadata::list_topics, v2::metadata::get_topic, v2::metadata::list_partitions,
        v2::metadata::get_partition, v2::metadata::partition_offsets, v2::metadata::brokers,
        v2::produce::produce_to_topic, v2::produce::produce_to_partition,
        v2::consumers::lifecycle::create, v2::consumers::lifecycle::delete,
        v2::consumers::subscription::subscribe, v2::consumers::subscription::subscription,
        v2::consumers::subscription::unsubscribe, v2::consumers::records::records,
        v2::consumers::offsets::commit, v2::consumers::offsets::committed,
        v2::consumers::assignments::assignments, v2::consumers::assignments::assign,
        v2::consumers::positions::seek, v2::consumers::positions::seek_to_beginning,
        v2::consumers::positions::seek_to_end,
        v3::metadata::list_clusters, v3::metadata::get_cluster, v3::metadata::list_topics,
        v3::metadata::create_topic, v3::metadata::get_topic, v3::metadata::delete_topic,
        v3::metadata::list_partitions, v3::metadata::get_partition,
        v3::metadata::partition_offset, v3::produce::produce,
    ),
    tags(
        (name = "rest-proxy-v2", description = "Kafka REST Proxy v2 compatibility: metadata, produce, consumer instances. Errors are {error_code, message}."),
        (name = "rest-proxy-v3", description = "Kafka REST Proxy v3 compatibility: the cluster, topics, partitions, streaming produce. Errors are {error_code, message}."),
    )
)]
struct RestProxyDoc;

/// Adds the REST Proxy routes to the document (listed before the modifiers that
/// constrain path parameters, so those apply here too).
pub(crate) struct RestProxyPaths;

impl utoipa::Modify for RestProxyPaths {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use crate::doc_parts::{content_of, operations};
        use utoipa::OpenApi;
        use utoipa::openapi::ResponseBuilder;
        let mut doc = RestProxyDoc::openapi();
        // Any status an operation does not list is the proxy's error shape in its API's
        // media type, or the server's problem+json (the middleware's refusals).
        for (path, item) in doc.paths.paths.iter_mut() {
            let v3 = is_v3(path);
            let (media, prefix) = if v3 {
                (content_type::V3_JSON, "proxy_v3_")
            } else {
                (content_type::V2_JSON, "proxy_v2_")
            };
            let default = ResponseBuilder::new()
                .description("Any other error: {error_code, message} from the route, or a problem (RFC 9457) from the server around it (auth, overload, timeouts)")
                .content(media, content_of("ProxyErrorBody"))
                .content(crate::error::PROBLEM_JSON, content_of("Problem"))
                .build();
            for op in operations(item) {
                // Unique beside /v1's operations of the same name (`list_topics`…).
                op.operation_id = op.operation_id.take().map(|id| format!("{prefix}{id}"));
                if !v3 {
                    in_v2_media_type(op);
                }
                op.responses
                    .responses
                    .entry("default".to_owned())
                    .or_insert_with(|| default.clone().into());
            }
        }
        openapi.merge(doc);
    }
}

/// v2 answers and reads `application/vnd.kafka.v2+json` wherever an operation names no
/// other media type: its annotations leave the type out (utoipa's default then is
/// `application/json`), and this sets v2's.
fn in_v2_media_type(op: &mut utoipa::openapi::path::Operation) {
    use utoipa::openapi::{Content, RefOr};
    fn renamed<M>(content: M) -> M
    where
        M: IntoIterator<Item = (String, Content)> + FromIterator<(String, Content)>,
    {
        content
            .into_iter()
            .map(|(media, c)| match media.as_str() {
                content_type::V3_JSON => (content_type::V2_JSON.to_owned(), c),
                _ => (media, c),
            })
            .collect()
    }
    for response in op.responses.responses.values_mut() {
        if let RefOr::T(response) = response {
            response.content = renamed(std::mem::take(&mut response.content));
        }
    }
    if let Some(body) = &mut op.request_body {
        body.content = renamed(std::mem::take(&mut body.content));
    }
}

/// Path parameters; a value that does not parse (a partition that is not a number) is
/// a 404, as on the proxy.
pub(crate) struct ProxyPath<T>(pub(crate) T);

impl<T> FromRequestParts<AppState> for ProxyPath<T>
where
    T: DeserializeOwned + Send,
{
    type Rejection = ProxyError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ProxyError> {
        let axum::extract::Path(path) = extract(parts, state, |e: PathRejection| {
            ProxyError::plain(StatusCode::NOT_FOUND, format!("HTTP 404 Not Found: {e}"))
        })
        .await?;
        Ok(ProxyPath(path))
    }
}

/// Runs axum's extractor `E`; its rejection becomes `refused`'s error, in the media
/// type of the API the path belongs to.
async fn extract<E>(
    parts: &mut Parts,
    state: &AppState,
    refused: impl FnOnce(E::Rejection) -> ProxyError,
) -> Result<E, ProxyError>
where
    E: FromRequestParts<AppState>,
{
    let v3 = is_v3(parts.uri.path());
    E::from_request_parts(parts, state)
        .await
        .map_err(|e| in_api(v3, refused(e)))
}

/// Whether a path belongs to the v3 API (else v2).
fn is_v3(path: &str) -> bool {
    path.starts_with("/v3/")
}

/// An error in the media type of its API.
fn in_api(v3: bool, e: ProxyError) -> ProxyError {
    if v3 { e.v3() } else { e }
}

/// Query parameters; a bad value is 400.
pub(crate) struct ProxyQuery<T>(pub(crate) T);

impl<T> FromRequestParts<AppState> for ProxyQuery<T>
where
    T: DeserializeOwned + Send,
{
    type Rejection = ProxyError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ProxyError> {
        let axum::extract::Query(query) = extract(parts, state, |e: QueryRejection| {
            ProxyError::plain(StatusCode::BAD_REQUEST, e.body_text())
        })
        .await?;
        Ok(ProxyQuery(query))
    }
}

/// The raw request body, with the server's size limit and body timeout (their statuses
/// kept, in the proxy's error shape).
pub(crate) struct ProxyBody(pub(crate) Bytes);

impl FromRequest<AppState> for ProxyBody {
    type Rejection = ProxyError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ProxyError> {
        let v3 = is_v3(req.uri().path());
        crate::extract::Body::from_request(req, state)
            .await
            .map(|b| ProxyBody(b.0))
            .map_err(|e| in_api(v3, ProxyError::from(e)))
    }
}

/// Parses a JSON request object: a syntax error is 400, a well-formed body of the wrong
/// shape 422, each with its status as the code (the proxy's JSON mappers do the same).
/// Read as JSON Schema reads it (the OpenAPI document's view): an integral number such
/// as `3.0` is an integer; tried only after the plain parse failed.
pub(crate) fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ProxyError> {
    let unprocessable = |e: &dyn std::fmt::Display| {
        ProxyError::plain(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Unprocessable entity: {e}"),
        )
    };
    // serde's derived structs also read arrays (fields by position); bodies are objects.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(_) => Err(unprocessable(&"expected a JSON object")),
            Err(e) => Err(ProxyError::plain(
                StatusCode::BAD_REQUEST,
                format!("Invalid JSON: {e}"),
            )),
        };
    }
    let first = match serde_json::from_slice(body) {
        Ok(v) => return Ok(v),
        Err(e) if e.classify() == Category::Data => e,
        Err(e) => {
            return Err(ProxyError::plain(
                StatusCode::BAD_REQUEST,
                format!("Invalid JSON: {e}"),
            ));
        }
    };
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Err(unprocessable(&first));
    };
    if !crate::extract::integral_floats_as_integers(&mut value) {
        return Err(unprocessable(&first));
    }
    serde_json::from_value(value).map_err(|_| unprocessable(&first))
}

/// A list of objects (`deserialize_with`): serde's derived structs also read an array
/// by position, which the document does not allow.
pub(crate) fn objects<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned,
{
    use serde::de::Error;
    let items: Vec<serde_json::Value> = serde::Deserialize::deserialize(d)?;
    items
        .into_iter()
        .map(|v| {
            if v.is_object() {
                serde_json::from_value(v).map_err(D::Error::custom)
            } else {
                Err(D::Error::custom(format!("expected an object, got {v}")))
            }
        })
        .collect()
}

/// An optional object (`deserialize_with`): absent or null is `None`; anything but an
/// object is refused, as with [`objects`].
pub(crate) fn optional_object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned,
{
    use serde::de::Error;
    match <Option<serde_json::Value> as serde::Deserialize>::deserialize(d)? {
        None => Ok(None),
        Some(v) if v.is_object() => serde_json::from_value(v)
            .map(Some)
            .map_err(D::Error::custom),
        Some(v) => Err(D::Error::custom(format!("expected an object, got {v}"))),
    }
}

/// A partition id (`deserialize_with`): Kafka's are int32s, as the document says.
pub(crate) fn partition_id<'de, D>(d: D) -> Result<u32, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::Error;
    let p: u32 = serde::Deserialize::deserialize(d)?;
    if p > i32::MAX as u32 {
        return Err(D::Error::custom(format!(
            "partition {p} is out of range (an int32)"
        )));
    }
    Ok(p)
}
/// Parses an optional JSON body (an empty one means none; neither `null` nor whitespace
/// is an object, as the document says).
pub(crate) fn parse_optional_body<T: DeserializeOwned>(
    body: &[u8],
) -> Result<Option<T>, ProxyError> {
    if body.is_empty() {
        return Ok(None);
    }
    parse_body(body).map(Some)
}

/// The base of the absolute URLs in answers (`base_uri`, `self`): `--public-url` if
/// set; else `http://` and the request's `Host` (or, without one, its URI's authority,
/// as HTTP/2 sends it; else `localhost`). A `Host` that is not a plain `host[:port]` is
/// refused with 400 (RFC 9112 asks for that), never copied into an answer.
pub(crate) fn base_url(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    uri: &axum::http::Uri,
) -> Result<String, ProxyError> {
    if let Some(url) = &state.config.public_url {
        return Ok(url.clone());
    }
    let host = match headers.get(header::HOST) {
        Some(h) => h.to_str().ok().filter(|h| kafko_service::config::is_host_and_port(h)).ok_or_else(|| {
            ProxyError::plain(
                StatusCode::BAD_REQUEST,
                "Invalid Host header: expected host[:port] (set --public-url to name the server's URL)",
            )
        })?,
        None => uri
            .authority()
            .map(axum::http::uri::Authority::as_str)
            .filter(|a| kafko_service::config::is_host_and_port(a))
            .unwrap_or("localhost"),
    };
    Ok(format!("http://{host}"))
}

/// The topic's producer; an unknown topic is created first when the server auto-creates
/// topics (as Kafka's `auto.create.topics.enable`), else it is 40401, as is a name no
/// topic can have.
pub(crate) async fn producer_for(
    state: &AppState,
    topic: &str,
) -> Result<kafko_core::Producer, ProxyError> {
    if kafko_core::naming::validate_name(topic).is_err() {
        return Err(ProxyError::topic_not_found(topic));
    }
    Ok(kafko_service::produce::producer(&state.kafko, &state.config.auto_create, topic).await?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_plain_host_and_port_is_a_host() {
        for good in [
            "localhost",
            "127.0.0.1:8080",
            "kafko.example.com",
            "[::1]",
            "[::1]:80",
            "a_b-c.d:65535",
        ] {
            assert!(kafko_service::config::is_host_and_port(good), "{good}");
        }
        for bad in [
            "",
            "evil.example:1/x?y#",
            "a b",
            "a:65536",
            "a:",
            ":80",
            "a:b:c",
            "[::1",
            "[zz]:1",
            "[::1]x",
            "user@host",
            "host/path",
            "h\u{e9}",
        ] {
            assert!(!kafko_service::config::is_host_and_port(bad), "{bad}");
        }
    }

    #[test]
    fn a_public_url_is_http_host_port_and_path_only() {
        let ok = |u: &str| kafko_service::config::public_url(u).unwrap();
        assert_eq!(
            ok("https://kafko.example.com/"),
            "https://kafko.example.com"
        );
        assert_eq!(ok("HTTP://h:8082/proxy/"), "http://h:8082/proxy");
        for bad in [
            "h:1",
            "ftp://h",
            "http://h/x?y",
            "http://h/#",
            "http://u@h",
            "http://",
        ] {
            assert!(kafko_service::config::public_url(bad).is_err(), "{bad}");
        }
    }
}
