//! The built-in web console: its static files (`kafko-http/ui/`, embedded in the binary
//! at build time, so it works offline and needs no toolchain beyond cargo), served under
//! `/ui`, and `/`'s redirect there for a browser. The console itself talks to the server
//! only through its public APIs, like any other client: `/v1`, and the schema registry's
//! (subjects, versions, and decoding records by schema id).
//!
//! The files carry no data, so they are served without the bearer token (the console asks
//! for it and sends it on its API calls); `middleware` lets these paths through.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::LazyLock;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use crate::extract::Path;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $content_type:expr) => {
        Asset {
            name: $name,
            content_type: $content_type,
            body: include_bytes!(concat!("../../ui/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file under `/ui/` except the page itself (which gets the version filled in).
const ASSETS: &[Asset] = &[
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("spark.js", JS),
    asset!("record.js", JS),
    asset!("overview.js", JS),
    asset!("topic.js", JS),
    asset!("groups.js", JS),
    asset!("schemas.js", JS),
];

/// The page, with the server's version in a `<meta>` (there is no version endpoint).
static INDEX: LazyLock<String> = LazyLock::new(|| {
    include_str!("../../ui/index.html").replace("%KAFKO_VERSION%", env!("CARGO_PKG_VERSION"))
});

/// Scripts, styles and connections from this origin only: the console loads nothing from
/// elsewhere, and a page that tried would be stopped by the browser.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
    connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `GET /ui` and `GET /ui/`: the console's page.
pub(crate) async fn index(headers: HeaderMap) -> Response {
    serve("text/html; charset=utf-8", INDEX.as_bytes(), &headers)
}

/// `GET /ui/{file}`: one of the console's scripts, styles or images.
pub(crate) async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(a) => serve(a.content_type, a.body, &headers),
        None => crate::error::ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no console file named '{file}'"),
        )
        .into_response(),
    }
}

/// Any request to `/`: a browser (a `GET` accepting `text/html`) is sent to the console;
/// everything else gets the 404 an unknown path gets, as before the console existed.
pub(crate) async fn root(req: Request) -> Response {
    if is_browser_navigation(req.method(), req.headers()) {
        return Redirect::temporary("/ui").into_response();
    }
    crate::error::not_found(req).await.into_response()
}

/// A `GET`/`HEAD` whose `Accept` names `text/html`: what a browser's address bar sends.
pub(crate) fn is_browser_navigation(method: &Method, headers: &HeaderMap) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.to_ascii_lowercase().contains("text/html"))
}

/// A file with its type, a validator (the content's hash: it changes with every build that
/// changes the file) and `no-cache`, so a browser revalidates and gets a 304 when unchanged.
fn serve(content_type: &'static str, body: &'static [u8], headers: &HeaderMap) -> Response {
    let etag = etag(body);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        Body::from(body).into_response()
    };
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    resp
}

fn etag(body: &[u8]) -> String {
    let mut hasher = DefaultHasher::new();
    body.hash(&mut hasher);
    format!("\"{:016x}\"", hasher.finish())
}
