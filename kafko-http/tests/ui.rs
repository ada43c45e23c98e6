//! The built-in console's files: `/ui` and everything it loads are served from the binary
//! with their content types and without a token; `/` sends a browser to `/ui` and leaves
//! API clients with the 404 (or 401) they always got.

mod common;

use std::collections::BTreeSet;

use common::{Server, json, problem};
use reqwest::header::{ACCEPT, CONTENT_TYPE};

const BROWSER_ACCEPT: &str =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

/// A client that shows redirects instead of following them.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The `/ui/...` paths a text refers to: `src`/`href` attributes and `./x.js` imports.
fn references(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (prefix, base) in [("\"/ui/", "/ui/"), ("'./", "/ui/")] {
        for piece in text.split(prefix).skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
                .collect();
            if name.contains('.') {
                out.insert(format!("{base}{name}"));
            }
        }
    }
    out
}

fn content_type(r: &reqwest::Response) -> String {
    r.headers()[CONTENT_TYPE].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_console_and_every_file_it_loads_are_served_with_their_types() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("data"), &[]).await;
    let c = client();

    let mut html = String::new();
    for path in ["/ui", "/ui/"] {
        let r = c.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(content_type(&r), "text/html; charset=utf-8");
        let csp = r.headers()["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"));
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
        html = r.text().await.unwrap();
    }
    assert!(html.contains(&format!(
        "<meta name=\"kafko-version\" content=\"{}\">",
        env!("CARGO_PKG_VERSION")
    )));

    // Follow every reference from the page and from each script, as a browser would.
    let mut todo: Vec<String> = references(&html).into_iter().collect();
    let mut seen = BTreeSet::new();
    while let Some(path) = todo.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let r = c.get(s.url(&path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let expected = match path.rsplit_once('.').map(|(_, ext)| ext) {
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            Some("svg") => "image/svg+xml",
            other => panic!("unexpected file type {other:?} for {path}"),
        };
        assert_eq!(content_type(&r), expected, "{path}");
        let body = r.text().await.unwrap();
        assert!(!body.is_empty(), "{path} is empty");
        if path.ends_with(".js") {
            // Everything is same-origin: no script reaches for another host (the SVG
            // namespace is a name, not a fetch).
            let code = body.replace("http://www.w3.org/2000/svg", "");
            assert!(
                !code.contains("http://") && !code.contains("https://"),
                "{path}"
            );
            todo.extend(references(&body));
        }
    }
    for file in [
        "app.js",
        "api.js",
        "overview.js",
        "topic.js",
        "groups.js",
        "style.css",
    ] {
        assert!(seen.contains(&format!("/ui/{file}")), "{file} not reached");
    }

    // A validator lets the browser keep an unchanged file.
    let r = c.get(s.url("/ui/app.js")).send().await.unwrap();
    let etag = r.headers()["etag"].clone();
    assert_eq!(r.headers()["cache-control"], "no-cache");
    let r = c
        .get(s.url("/ui/app.js"))
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);

    let r = c.get(s.url("/ui/missing.js")).send().await.unwrap();
    problem(r, 404, "not_found").await;
    let r = c.get(s.url("/ui/..%2FCargo.toml")).send().await.unwrap();
    problem(r, 404, "not_found").await;
}

#[tokio::test]
async fn root_redirects_a_browser_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("data"), &[]).await;
    let c = client();

    for method in [reqwest::Method::GET, reqwest::Method::HEAD] {
        let r = c
            .request(method.clone(), s.url("/"))
            .header(ACCEPT, BROWSER_ACCEPT)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 307, "{method}");
        assert_eq!(r.headers()["location"], "/ui");
    }

    // API clients: the same 404 as any unknown path.
    for accept in [None, Some("application/json"), Some("*/*")] {
        let mut req = c.get(s.url("/"));
        if let Some(a) = accept {
            req = req.header(ACCEPT, a);
        }
        let body = problem(req.send().await.unwrap(), 404, "not_found").await;
        assert_eq!(body["detail"], "no route for GET /");
    }
    let r = c
        .post(s.url("/"))
        .header(ACCEPT, BROWSER_ACCEPT)
        .body("x")
        .send()
        .await
        .unwrap();
    problem(r, 404, "not_found").await;
}

#[tokio::test]
async fn with_a_token_the_files_are_public_and_the_api_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("data"), &["--auth-token", "t0ken"]).await;
    let c = client();

    for path in ["/ui", "/ui/", "/ui/app.js", "/ui/style.css"] {
        let r = c.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
    let r = c
        .get(s.url("/"))
        .header(ACCEPT, BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 307);

    // What the console then calls needs the token, as for any client.
    let r = c.get(s.url("/v1/topics")).send().await.unwrap();
    problem(r, 401, "unauthorized").await;
    let r = c.get(s.url("/")).send().await.unwrap();
    problem(r, 401, "unauthorized").await;
    let r = c
        .get(s.url("/v1/topics"))
        .bearer_auth("t0ken")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(json(r).await["topics"], serde_json::json!([]));
}
