//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` attributes,
//! with the document of routes another crate serves under this crate's middleware (the
//! schema registry) merged in: [`document_with`]. `openapi/openapi.json` is the binary's
//! document, committed; a test keeps them equal.

use crate::doc_parts::{content_of, operations};
use utoipa::OpenApi;

use crate::rest_proxy::RestProxyPaths;
use crate::v1::{admin, groups, health, records, topics};

#[derive(OpenApi)]
#[openapi(
    info(title = "kafko", description = "A durable single-node log with Kafka semantics, over HTTP. Errors are application/problem+json (RFC 9457) with a stable `code`."),
    paths(
        topics::list, topics::create, topics::describe, topics::update, topics::delete,
        records::produce::produce, records::fetch::fetch,
        records::single::get_record, records::single::offsets,
        groups::poll, groups::commit, groups::seek, groups::join, groups::leave,
        groups::list, groups::describe, groups::configure, groups::delete,
        admin::shutdown,
        health::healthz, health::readyz, health::metrics, spec,
    ),
    components(schemas(crate::body_format::Format)),
    modifiers(&RestProxyPaths, &BearerAuth, &NameRules, &ClientRules),
    security((), ("bearer" = [])),
    tags(
        (name = "topics", description = "Create, inspect, configure and delete topics"),
        (name = "records", description = "Produce and consume records"),
        (name = "groups", description = "Consumer groups: server-kept cursors, members and lag"),
        (name = "admin", description = "Server administration"),
        (name = "operations", description = "Probes, metrics and this document"),
    )
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Topic, group and member names follow Kafka's rule (`kafko_core::naming`): 1–249 of
/// `[a-zA-Z0-9._-]`, not `.` or `..`. Said once here for every parameter that carries
/// one, so clients and fuzzers (schemathesis) know a `%` or `é` is a 400, not a lookup.
/// The `offset` query parameter of reads gets its pattern too (a number, `earliest` or
/// `latest`), and so does `Last-Event-ID` (`partition:offset`, or empty: none).
struct NameRules;

/// [`NameRules`]' pattern: a name with a character other than `.`, or three dots or more
/// (no look-ahead, so every regex dialect reads it).
pub(crate) const NAME_PATTERN: &str = r"^(?:[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*|\.{3,})$";

impl utoipa::Modify for NameRules {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        // `member_id` members of bodies (join, commit, seek) and responses.
        let components = openapi.components.iter_mut();
        for schema in components.flat_map(|c| c.schemas.values_mut()) {
            let utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::Object(object)) = schema
            else {
                continue;
            };
            if let Some(utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::Object(
                member,
            ))) = object.properties.get_mut("member_id")
            {
                member.pattern = Some(NAME_PATTERN.to_owned());
                member.min_length = Some(1);
                member.max_length = Some(kafko_core::naming::MAX_NAME_LEN);
            }
        }
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in operations.into_iter().flatten() {
                for param in op.parameters.iter_mut().flatten() {
                    if matches!(param.name.as_str(), "topic" | "group" | "member_id") {
                        let schema = ObjectBuilder::new()
                            .schema_type(Type::String)
                            .min_length(Some(1))
                            .max_length(Some(kafko_core::naming::MAX_NAME_LEN))
                            .pattern(Some(NAME_PATTERN));
                        param.schema = Some(schema.into());
                    }
                    widen_u64(param);
                    if param.name == "Last-Event-ID" {
                        let schema = ObjectBuilder::new()
                            .schema_type(Type::String)
                            .pattern(Some(r"^([0-9]{1,10}:[0-9]{1,20})?$"));
                        param.schema = Some(schema.into());
                    }
                    if param.name == "offset"
                        && matches!(
                            param.parameter_in,
                            utoipa::openapi::path::ParameterIn::Query
                        )
                    {
                        let schema = ObjectBuilder::new()
                            .schema_type(Type::String)
                            .pattern(Some(r"^([0-9]{1,20}|earliest|latest)$"));
                        param.schema = Some(schema.into());
                    }
                }
            }
        }
    }
}

/// A `u64` parameter is `integer`/`int64` with `minimum: 0` as utoipa spells it, which
/// reads as "at most i64::MAX"; the server parses the whole `u64` range (and refuses
/// past it), so say `uint64` up to `u64::MAX` (schemathesis: `wait_ms=2^63` was a
/// "schema-violating request accepted").
fn widen_u64(param: &mut utoipa::openapi::path::Parameter) {
    use utoipa::openapi::schema::{KnownFormat, Schema, SchemaFormat};
    let Some(utoipa::openapi::RefOr::T(Schema::Object(object))) = param.schema.as_mut() else {
        return;
    };
    let int64 = matches!(
        object.format,
        Some(SchemaFormat::KnownFormat(KnownFormat::Int64))
    );
    let unsigned = matches!(
        object.minimum,
        Some(utoipa::Number::Int(0) | utoipa::Number::UInt(0))
    ) || matches!(object.minimum, Some(utoipa::Number::Float(f)) if f == 0.0);
    if int64 && unsigned {
        object.format = Some(SchemaFormat::Custom("uint64".into()));
        object.maximum = Some(utoipa::Number::UInt(
            usize::try_from(u64::MAX).unwrap_or(usize::MAX),
        ));
    }
}

/// What generated clients need beyond the handlers' annotations:
/// - an optional request body is its schema with `required: false` (utoipa writes an
///   `Option<T>` body as `oneOf: [null, T]`, which generators turn into a body that
///   cannot be left out, or one they fail to serialize when it is);
/// - every operation has a `default` response, the [`Problem`](crate::dto::Problem) of
///   every error, so that clients parse any error status (401, 413, 503, …) instead of
///   failing on one the operation does not list.
struct ClientRules;

impl utoipa::Modify for ClientRules {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{Required, ResponseBuilder};
        let problem = ResponseBuilder::new()
            .description("Any error: a problem (RFC 9457) whose `code` says which")
            .content(crate::error::PROBLEM_JSON, content_of("Problem"))
            .build();
        for item in openapi.paths.paths.values_mut() {
            for op in operations(item) {
                if let Some(body) = op.request_body.as_mut()
                    && !matches!(body.required, Some(Required::True))
                {
                    body.required = Some(Required::False);
                    for content in body.content.values_mut() {
                        if let Some(schema) = content.schema.take() {
                            content.schema = Some(without_null(schema));
                        }
                    }
                }
                op.responses
                    .responses
                    .entry("default".to_owned())
                    .or_insert_with(|| problem.clone().into());
            }
        }
    }
}

/// `oneOf: [null, T]` → `T`; any other schema as it is.
fn without_null(
    schema: utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{Schema, SchemaType, Type};
    let RefOr::T(Schema::OneOf(one_of)) = &schema else {
        return schema;
    };
    let is_null = |s: &RefOr<Schema>| matches!(s, RefOr::T(Schema::Object(o)) if o.schema_type == SchemaType::Type(Type::Null));
    let mut rest = one_of.items.iter().filter(|s| !is_null(s));
    match (rest.next(), rest.next()) {
        (Some(only), None) if one_of.items.len() == 2 => only.clone(),
        _ => schema,
    }
}

/// This crate's document with `extra` merged in: the operations of routes served
/// beside this crate's, under its middleware ([`app_with`](crate::app_with)). Their
/// `default` answers gain the middleware's own refusals (auth, overload, timeouts) as
/// problems. A path or component name `extra` shares with this crate's is not merged.
pub fn document_with(mut extra: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    for item in extra.paths.paths.values_mut() {
        for op in operations(item) {
            let Some(utoipa::openapi::RefOr::T(default)) =
                op.responses.responses.get_mut("default")
            else {
                continue;
            };
            default
                .content
                .entry(crate::error::PROBLEM_JSON.to_owned())
                .or_insert_with(|| content_of("Problem"));
        }
    }
    doc.merge(extra);
    doc
}

/// [`document_with`] as pretty JSON with a trailing newline (the committed file's form).
pub fn json_with(extra: utoipa::openapi::OpenApi) -> String {
    let mut text = document_with(extra)
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    text.push('\n');
    text
}

/// The served document: its text, built at the first request for it (building it costs
/// megabytes an idle server need not hold), from this crate's document and `extra`'s.
#[derive(Clone)]
pub(crate) struct SpecText {
    text: std::sync::Arc<std::sync::OnceLock<bytes::Bytes>>,
    extra: fn() -> utoipa::openapi::OpenApi,
}

impl SpecText {
    /// The document with `extra`'s paths and schemas merged in, once asked for.
    pub(crate) fn new(extra: fn() -> utoipa::openapi::OpenApi) -> Self {
        SpecText {
            text: std::sync::Arc::default(),
            extra,
        }
    }

    fn text(&self) -> bytes::Bytes {
        self.text
            .get_or_init(|| bytes::Bytes::from(json_with((self.extra)())))
            .clone()
    }
}

/// This server's OpenAPI 3.1 document.
#[utoipa::path(get, path = "/openapi.json", operation_id = "get_openapi", tag = "operations",
    responses((status = 200, description = "The OpenAPI document", body = Object)))]
pub(crate) async fn spec(
    axum::Extension(spec): axum::Extension<SpecText>,
) -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        spec.text(),
    )
}
