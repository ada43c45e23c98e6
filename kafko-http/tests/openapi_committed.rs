//! `openapi/openapi.json` must equal the document the server generates. Regenerate with
//! `KAFKO_UPDATE_OPENAPI=1 cargo test -p kafko-http --test openapi_committed` or
//! `cargo run -p kafko-http -- --print-openapi > openapi/openapi.json`.

#[test]
fn committed_openapi_matches_generated() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../openapi/openapi.json");
    let generated = kafko_http::openapi::json();
    if std::env::var_os("KAFKO_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "openapi/openapi.json is stale; regenerate with KAFKO_UPDATE_OPENAPI=1 cargo test -p kafko-http --test openapi_committed"
    );
    let doc: serde_json::Value = serde_json::from_str(&generated).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for (i, _) in generated.match_indices("#/components/schemas/") {
        let name: String = generated[i + 21..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        assert!(schemas.contains_key(&name), "dangling $ref to {name}");
    }
    for p in [
        "/v1/topics",
        "/v1/topics/{topic}",
        "/v1/topics/{topic}/records",
        "/v1/topics/{topic}/partitions/{partition}/records/{offset}",
        "/v1/topics/{topic}/partitions/{partition}/offsets",
        "/v1/admin/shutdown",
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
    ] {
        assert!(doc["paths"][p].is_object(), "{p} missing from the spec");
    }
}
