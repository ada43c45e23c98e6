//! The built-in console's files: `/ui` and everything it loads are served from the binary
//! with their content types and without a token; `/` sends a browser to `/ui` and leaves
//! API clients with the 404 (or 401) they always got.

mod common;

use std::collections::BTreeSet;

use common::{Server, fresh_server, get, json, problem};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Method, RequestBuilder};

const BROWSER_ACCEPT: &str =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A request for `path` that accepts what a browser accepts.
fn as_browser(c: &reqwest::Client, s: &Server, method: Method, path: &str) -> RequestBuilder {
    c.request(method, s.url(path))
        .header(ACCEPT, BROWSER_ACCEPT)
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
    let (_tmp, s, _) = fresh_server(&[]).await;
    let c = no_redirects();

    let mut html = String::new();
    for path in ["/ui", "/ui/"] {
        let r = get(&c, &s, path).await;
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
        let r = get(&c, &s, &path).await;
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
    let r = get(&c, &s, "/ui/app.js").await;
    let etag = r.headers()["etag"].clone();
    assert_eq!(r.headers()["cache-control"], "no-cache");
    let r = c
        .get(s.url("/ui/app.js"))
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);

    let r = get(&c, &s, "/ui/missing.js").await;
    problem(r, 404, "not_found").await;
    let r = get(&c, &s, "/ui/..%2FCargo.toml").await;
    problem(r, 404, "not_found").await;
}

#[tokio::test]
async fn root_redirects_a_browser_and_nothing_else() {
    let (_tmp, s, _) = fresh_server(&[]).await;
    let c = no_redirects();

    for method in [Method::GET, Method::HEAD] {
        let r = as_browser(&c, &s, method.clone(), "/")
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
    let post = as_browser(&c, &s, Method::POST, "/").body("x");
    problem(post.send().await.unwrap(), 404, "not_found").await;
}

#[tokio::test]
async fn with_a_token_the_files_are_public_and_the_api_is_not() {
    let (_tmp, s, _) = fresh_server(&["--auth-token", "t0ken"]).await;
    let c = no_redirects();

    for path in ["/ui", "/ui/", "/ui/app.js", "/ui/style.css"] {
        let r = get(&c, &s, path).await;
        assert_eq!(r.status(), 200, "{path}");
    }
    let r = as_browser(&c, &s, Method::GET, "/").send().await.unwrap();
    assert_eq!(r.status(), 307);

    // What the console then calls needs the token, as for any client.
    let r = get(&c, &s, "/v1/topics").await;
    problem(r, 401, "unauthorized").await;
    let r = get(&c, &s, "/").await;
    problem(r, 401, "unauthorized").await;
    let with_token = c.get(s.url("/v1/topics")).bearer_auth("t0ken");
    let r = with_token.send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(json(r).await["topics"], serde_json::json!([]));
}
