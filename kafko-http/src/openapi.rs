//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` attributes.
//! `openapi/openapi.json` is this document, committed; a test keeps them equal.

use utoipa::OpenApi;

use crate::routes::{admin, groups, health, records, topics};

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
        health::healthz, health::readyz, health::metrics, health::openapi,
    ),
    components(schemas(crate::codec::Format)),
    modifiers(&BearerAuth),
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

/// The document as a value.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

/// The document as pretty JSON with a trailing newline (the committed file's form).
pub fn json() -> String {
    let mut text = document()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    text.push('\n');
    text
}
