//! `openapi/openapi.json` must equal the document the server generates (kafko-http's
//! with the schema registry's merged in). Regenerate with
//! `KAFKO_UPDATE_OPENAPI=1 cargo test -p kafko --test openapi_committed` or
//! `cargo run -p kafko -- --print-openapi > openapi/openapi.json`.

/// The binary's document, as `--print-openapi` writes it and `/openapi.json` serves it.
fn generated() -> String {
    kafko_http::openapi::json_with(kafko_registry::http::openapi())
}

#[test]
fn committed_openapi_matches_generated() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../openapi/openapi.json");
    let generated = generated();
    if std::env::var_os("KAFKO_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "openapi/openapi.json is stale; regenerate with KAFKO_UPDATE_OPENAPI=1 cargo test -p kafko --test openapi_committed"
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
        "/subjects",
        "/subjects/{subject}/versions",
        "/subjects/{subject}/versions/{version}",
        "/schemas/ids/{id}",
        "/config/{subject}",
        "/compatibility/subjects/{subject}/versions/{version}",
    ] {
        assert!(doc["paths"][p].is_object(), "{p} missing from the spec");
    }
}

/// What client generators need: unique operation ids, a Problem for any error status,
/// and optional bodies as a plain schema with `required: false` (not `oneOf` null).
#[test]
fn every_operation_is_one_a_generator_can_name_and_call() {
    let doc: serde_json::Value = serde_json::from_str(&generated()).unwrap();
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap_or_default().to_owned();
            assert!(
                ids.insert(id.clone()),
                "operationId {id:?} of {method} {path} is not unique"
            );
            assert_eq!(
                op["responses"]["default"]["content"]["application/problem+json"]["schema"]["$ref"],
                "#/components/schemas/Problem",
                "{method} {path} has no default problem response"
            );
            let Some(body) = op.get("requestBody") else {
                continue;
            };
            for (media, content) in body["content"].as_object().unwrap() {
                assert!(
                    content["schema"].get("oneOf").is_none() || body["required"] == true,
                    "{method} {path} ({media}): an optional body is a oneOf"
                );
            }
        }
    }
}

/// Lower bounds on array lengths describe what a request must carry; an answer may be empty
/// (a subscription before the first subscribe), so no schema an answer uses carries one.
#[test]
fn no_answer_schema_demands_a_non_empty_list() {
    use serde_json::Value;
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v.as_str()) {
                        ("$ref", Some(r)) => out.push(r.rsplit('/').next().unwrap_or(r).to_owned()),
                        _ => refs(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let doc: Value = serde_json::from_str(&generated()).unwrap();
    let schemas = &doc["components"]["schemas"];
    let mut todo = Vec::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            refs(&op["responses"], &mut todo);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let schema = &schemas[&name];
        assert!(
            !schema.to_string().contains("\"minItems\""),
            "{name} is in an answer and demands a non-empty list: {schema}"
        );
        refs(schema, &mut todo);
    }
    assert!(seen.len() > 20, "walked {} answer schemas", seen.len());
}

/// The registry's operations are all merged, none lost to a name kafko-http already
/// uses: each of its paths and component schemas is in the document as the registry
/// wrote it, and its errors are its own shape or, from the middleware, a problem.
#[test]
fn the_registry_is_merged_whole() {
    let registry = serde_json::to_value(kafko_registry::http::openapi()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&generated()).unwrap();
    let paths = registry["paths"].as_object().unwrap();
    assert!(paths.len() >= 18, "{} registry paths", paths.len());
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let merged = &doc["paths"][path][method];
            assert_eq!(
                merged["operationId"], op["operationId"],
                "{method} {path} is not the registry's"
            );
            assert_eq!(merged["tags"], serde_json::json!(["schema-registry"]));
            let default = &merged["responses"]["default"]["content"];
            assert_eq!(
                default["application/vnd.schemaregistry.v1+json"]["schema"]["$ref"],
                "#/components/schemas/RegistryErrorBody",
                "{method} {path}"
            );
        }
    }
    for (name, schema) in registry["components"]["schemas"].as_object().unwrap() {
        assert_eq!(
            &doc["components"]["schemas"][name], schema,
            "component {name} is not the registry's"
        );
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["basic"]["scheme"],
        "basic"
    );
}
