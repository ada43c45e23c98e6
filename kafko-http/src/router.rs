//! [`app`]: every route under its full path, with the middleware stack (outermost first):
//! CORS, then the [`Envelope`](crate::middleware::Envelope) (metrics, auth, concurrency
//! limit, request timeout). Body limits are the `Body` extractor's, not a layer.
//! [`app_with`] adds routes served by another crate (the schema registry) under the
//! same stack, and their OpenAPI document to the served one; [`envelope`] puts that
//! stack around routes served on a listener of their own.

use axum::Router;
use axum::http::{HeaderName, HeaderValue, Method};
use axum::routing::{any, delete, get, post, put};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use crate::middleware;
use crate::state::AppState;
use crate::v1::{admin, groups, health, records, topics, ui};

/// The full application router.
pub fn app(state: AppState) -> Router {
    app_with(state, Router::new(), utoipa::openapi::OpenApi::default)
}

/// The full application router with `extra` routes beside the API's (their paths must
/// not overlap; `extra` has no fallback of its own), under the same middleware;
/// `extra_doc` describes them in the served `/openapi.json`
/// ([`document_with`](crate::openapi::document_with)).
pub fn app_with(
    state: AppState,
    extra: Router,
    extra_doc: fn() -> utoipa::openapi::OpenApi,
) -> Router {
    let spec = crate::openapi::SpecText::new(extra_doc);
    // Every path is written out whole: a nested router (`nest("/v1", …)`) costs each
    // request a prefix strip, a path rewrite and two more service layers (allocations
    // counted with a uprobe on `malloc`).
    let mut router = Router::new()
        .route("/v1/topics", get(topics::list))
        .route(
            "/v1/topics/{topic}",
            put(topics::create)
                .get(topics::describe)
                .patch(topics::update)
                .delete(topics::delete),
        )
        .route(
            "/v1/topics/{topic}/records",
            post(records::produce::produce).get(records::fetch::fetch),
        )
        .route(
            "/v1/topics/{topic}/partitions/{partition}/records/{offset}",
            get(records::single::get_record),
        )
        .route(
            "/v1/topics/{topic}/partitions/{partition}/offsets",
            get(records::single::offsets),
        )
        .route("/v1/groups", get(groups::list))
        .route(
            "/v1/groups/{group}",
            get(groups::describe)
                .put(groups::configure)
                .delete(groups::delete),
        )
        .route("/v1/groups/{group}/topics/{topic}/poll", post(groups::poll))
        .route(
            "/v1/groups/{group}/topics/{topic}/offsets",
            put(groups::commit),
        )
        .route("/v1/groups/{group}/topics/{topic}/seek", post(groups::seek))
        .route(
            "/v1/groups/{group}/topics/{topic}/members",
            post(groups::join),
        )
        .route(
            "/v1/groups/{group}/topics/{topic}/members/{member_id}",
            delete(groups::leave),
        )
        .route("/v1/admin/shutdown", post(admin::shutdown))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route(
            "/openapi.json",
            get(crate::openapi::spec).layer(axum::Extension(spec)),
        )
        .route("/", any(ui::root))
        .route("/ui", get(ui::index))
        .route("/ui/", get(ui::index))
        .route("/ui/{file}", get(ui::asset))
        .merge(crate::rest_proxy::routes(
            state.config.consumer_instance_timeout,
        ))
        .fallback(crate::error::not_found)
        .method_not_allowed_fallback(crate::error::method_not_allowed)
        .with_state(state.clone())
        .merge(extra)
        .layer(middleware::EnvelopeLayer(state.clone()));
    if let Some(cors) = cors(&state.config.cors_origins) {
        router = router.layer(cors);
    }
    router
}

/// `routes` (with their own fallback) under the API's middleware: metrics, auth,
/// concurrency limits, request timeout and CORS, as [`app`] serves its routes.
pub fn envelope(state: &AppState, routes: Router) -> Router {
    let mut router = routes.layer(middleware::EnvelopeLayer(state.clone()));
    if let Some(cors) = cors(&state.config.cors_origins) {
        router = router.layer(cors);
    }
    router
}

fn cors(origins: &[String]) -> Option<CorsLayer> {
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    if origins.is_empty() {
        return None;
    }
    let exposed = [
        "kafko-partition",
        "kafko-offset",
        "kafko-timestamp",
        "kafko-key",
        "kafko-header",
        "kafko-tombstone",
        "retry-after",
    ]
    .map(HeaderName::from_static);
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
            ])
            .allow_headers(AllowHeaders::mirror_request())
            .expose_headers(exposed),
    )
}
