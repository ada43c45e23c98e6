//! The schema registry of the real binary, over HTTP on its own listener
//! (`--schema-registry-bind`) and on the main port: register, look up, ids, versions,
//! deletes, configs, modes, compatibility (409 under BACKWARD), auth, bounds, the
//! `_schemas` records in Confluent's format, and what survives a restart or a SIGKILL.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Server, client, json};
use reqwest::Client;
use serde_json::{Value, json};

const CT: &str = "application/vnd.schemaregistry.v1+json";

fn user_v1() -> String {
    json!({"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}).to_string()
}

fn user_v2() -> String {
    json!({"type":"record","name":"User","fields":[
        {"name":"name","type":"string"},
        {"name":"age","type":"int","default":0}
    ]})
    .to_string()
}

/// A field added without a default: old data cannot be read with it.
fn user_incompatible() -> String {
    json!({"type":"record","name":"User","fields":[
        {"name":"name","type":"string"},
        {"name":"email","type":"string"}
    ]})
    .to_string()
}

async fn start(dir: &std::path::Path, extra: &[&str]) -> (Server, String) {
    let mut flags = vec!["--schema-registry-bind", "127.0.0.1:0"];
    flags.extend_from_slice(extra);
    let s = Server::start(dir, &flags).await;
    let r = s.registry.clone().expect("the registry's listener");
    (s, r)
}

/// Sends `method path` with an optional JSON body; returns (status, body as JSON).
async fn call(c: &Client, method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = c.request(m, url);
    if let Some(b) = body {
        req = req.header("content-type", CT).body(b.to_string());
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    if status != 401 {
        assert_eq!(resp.headers()["content-type"], CT, "{method} {url}");
    }
    (status, json(resp).await)
}

async fn register(c: &Client, r: &str, subject: &str, schema: &str) -> (u16, Value) {
    call(
        c,
        "POST",
        &format!("{r}/subjects/{subject}/versions"),
        Some(json!({"schema": schema})),
    )
    .await
}

fn error_code(body: &Value) -> u64 {
    body["error_code"]
        .as_u64()
        .unwrap_or_else(|| panic!("{body}"))
}

#[tokio::test]
async fn register_look_up_evolve_and_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();

    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects"), None).await,
        (200, json!([]))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/schemas/types"), None).await,
        (200, json!(["AVRO", "JSON", "PROTOBUF"]))
    );
    let (st, b) = register(&c, &r, "users-value", &user_v1()).await;
    assert_eq!((st, b["id"].as_u64()), (200, Some(1)), "{b}");
    // The same schema again (whitespace aside): the same id, no new version.
    let spaced =
        serde_json::to_string_pretty(&serde_json::from_str::<Value>(&user_v1()).unwrap()).unwrap();
    assert_eq!(
        register(&c, &r, "users-value", &spaced).await,
        (200, json!({"id": 1}))
    );
    // The same schema under another subject keeps its id.
    assert_eq!(
        register(&c, &r, "other-value", &user_v1()).await,
        (200, json!({"id": 1}))
    );
    // Evolution under the default BACKWARD level.
    assert_eq!(
        register(&c, &r, "users-value", &user_v2()).await,
        (200, json!({"id": 2}))
    );
    let (st, b) = register(&c, &r, "users-value", &user_incompatible()).await;
    assert_eq!((st, error_code(&b)), (409, 409), "{b}");
    // verbose compatibility check says why
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/compatibility/subjects/users-value/versions/latest?verbose=true"),
        Some(json!({"schema": user_incompatible()})),
    )
    .await;
    assert_eq!((st, &b["is_compatible"]), (200, &json!(false)), "{b}");
    assert!(!b["messages"].as_array().unwrap().is_empty(), "{b}");
    let (_, b) = call(
        &c,
        "POST",
        &format!("{r}/compatibility/subjects/users-value/versions/1"),
        Some(json!({"schema": user_v2(), "metadata": null, "ruleSet": null})),
    )
    .await;
    assert_eq!(b, json!({"is_compatible": true}));

    // Reads.
    assert_eq!(
        call(
            &c,
            "GET",
            &format!("{r}/subjects/users-value/versions"),
            None
        )
        .await,
        (200, json!([1, 2]))
    );
    let (_, b) = call(
        &c,
        "GET",
        &format!("{r}/subjects/users-value/versions/latest"),
        None,
    )
    .await;
    assert_eq!(b["version"], 2);
    assert_eq!(b["id"], 2);
    assert_eq!(b["subject"], "users-value");
    assert!(b.get("schemaType").is_none(), "Avro has no schemaType: {b}");
    let (_, b) = call(&c, "GET", &format!("{r}/schemas/ids/1"), None).await;
    assert_eq!(b, json!({"schema": user_v1()}));
    let (_, raw) = call(&c, "GET", &format!("{r}/schemas/ids/2/schema"), None).await;
    assert_eq!(raw, serde_json::from_str::<Value>(&user_v2()).unwrap());
    let (_, raw) = call(
        &c,
        "GET",
        &format!("{r}/subjects/users-value/versions/1/schema"),
        None,
    )
    .await;
    assert_eq!(raw, serde_json::from_str::<Value>(&user_v1()).unwrap());
    assert_eq!(
        call(&c, "GET", &format!("{r}/schemas/ids/1/subjects"), None).await,
        (200, json!(["other-value", "users-value"]))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/schemas/ids/1/versions"), None).await,
        (
            200,
            json!([{"subject":"other-value","version":1},{"subject":"users-value","version":1}])
        )
    );
    let (_, all) = call(&c, "GET", &format!("{r}/schemas?subjectPrefix=users"), None).await;
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    let (_, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/users-value"),
        Some(json!({"schema": user_v1()})),
    )
    .await;
    assert_eq!(
        (b["version"].as_u64(), b["id"].as_u64()),
        (Some(1), Some(1)),
        "{b}"
    );

    // Errors, each with its code.
    let cases = [
        ("GET", "/subjects/nobody/versions", 404, 40401),
        ("GET", "/subjects/users-value/versions/9", 404, 40402),
        ("GET", "/schemas/ids/99", 404, 40403),
        ("GET", "/subjects/users-value/versions/0", 422, 42202),
        ("GET", "/subjects/users-value/versions/abc", 422, 42202),
        ("GET", "/config/users-value", 404, 40408),
        ("GET", "/mode/users-value", 404, 40409),
        ("GET", "/no/such/path", 404, 404),
    ];
    for (m, path, status, code) in cases {
        let (st, b) = call(&c, m, &format!("{r}{path}"), None).await;
        assert_eq!((st, error_code(&b)), (status, code), "{m} {path}: {b}");
    }
    let (st, b) = register(&c, &r, "bad", "{\"type\":\"record\"}").await;
    assert_eq!((st, error_code(&b)), (422, 42201), "{b}");
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/users-value"),
        Some(json!({"schema": user_incompatible()})),
    )
    .await;
    assert_eq!((st, error_code(&b)), (404, 40403), "{b}");
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/x/versions"),
        Some(json!({"nope": 1})),
    )
    .await;
    assert_eq!((st, error_code(&b)), (400, 400), "{b}");

    // Deletes: a version soft, then permanently; a subject soft, then permanently.
    let base = format!("{r}/subjects/users-value");
    let (st, b) = call(
        &c,
        "DELETE",
        &format!("{base}/versions/2?permanent=true"),
        None,
    )
    .await;
    assert_eq!((st, error_code(&b)), (404, 40407), "{b}");
    assert_eq!(
        call(&c, "DELETE", &format!("{base}/versions/2"), None).await,
        (200, json!(2))
    );
    let (st, b) = call(&c, "DELETE", &format!("{base}/versions/2"), None).await;
    assert_eq!((st, error_code(&b)), (404, 40406), "{b}");
    assert_eq!(
        call(&c, "GET", &format!("{base}/versions"), None).await,
        (200, json!([1]))
    );
    assert_eq!(
        call(&c, "GET", &format!("{base}/versions?deleted=true"), None).await,
        (200, json!([1, 2]))
    );
    // A soft-deleted schema is still served by id.
    assert_eq!(
        call(&c, "GET", &format!("{r}/schemas/ids/2"), None).await.0,
        200
    );
    assert_eq!(
        call(
            &c,
            "DELETE",
            &format!("{base}/versions/2?permanent=true"),
            None
        )
        .await,
        (200, json!(2))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/schemas/ids/2"), None).await.0,
        404
    );
    let (st, b) = call(&c, "DELETE", &format!("{base}?permanent=true"), None).await;
    assert_eq!((st, error_code(&b)), (404, 40405), "{b}");
    assert_eq!(call(&c, "DELETE", &base, None).await, (200, json!([1])));
    let (st, b) = call(&c, "DELETE", &base, None).await;
    assert_eq!((st, error_code(&b)), (404, 40404), "{b}");
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects"), None).await,
        (200, json!(["other-value"]))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects?deleted=true"), None).await,
        (200, json!(["other-value", "users-value"]))
    );
    assert_eq!(
        call(&c, "DELETE", &format!("{base}?permanent=true"), None).await,
        (200, json!([1]))
    );
    // A new schema never takes a freed id: id 2 was deleted, the next is 3.
    let v3 = json!({"type":"record","name":"Fresh","fields":[]}).to_string();
    assert_eq!(
        register(&c, &r, "users-value", &v3).await,
        (200, json!({"id": 3}))
    );
}

#[tokio::test]
async fn configs_modes_json_schema_and_the_main_port() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    assert_eq!(
        call(&c, "GET", &format!("{r}/config"), None).await,
        (200, json!({"compatibilityLevel": "BACKWARD"}))
    );
    assert_eq!(
        call(
            &c,
            "PUT",
            &format!("{r}/config"),
            Some(json!({"compatibility": "full"}))
        )
        .await,
        (200, json!({"compatibility": "FULL"}))
    );
    let (st, b) = call(
        &c,
        "PUT",
        &format!("{r}/config/s"),
        Some(json!({"compatibility": "SIDEWAYS"})),
    )
    .await;
    assert_eq!((st, error_code(&b)), (422, 42203), "{b}");
    assert_eq!(
        call(
            &c,
            "PUT",
            &format!("{r}/config/s"),
            Some(json!({"compatibility": "NONE"}))
        )
        .await,
        (200, json!({"compatibility": "NONE"}))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/config/s"), None).await,
        (200, json!({"compatibilityLevel": "NONE"}))
    );
    assert_eq!(
        call(
            &c,
            "GET",
            &format!("{r}/config/t?defaultToGlobal=true"),
            None
        )
        .await,
        (200, json!({"compatibilityLevel": "FULL"}))
    );
    // Under NONE anything goes.
    assert_eq!(register(&c, &r, "s", &user_v1()).await.0, 200);
    assert_eq!(register(&c, &r, "s", &user_incompatible()).await.0, 200);
    assert_eq!(
        call(&c, "DELETE", &format!("{r}/config/s"), None).await,
        (200, json!({"compatibilityLevel": "NONE"}))
    );
    assert_eq!(
        call(&c, "DELETE", &format!("{r}/config"), None).await,
        (200, json!({"compatibilityLevel": "FULL"}))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/config"), None).await,
        (200, json!({"compatibilityLevel": "BACKWARD"}))
    );

    // Modes: READONLY refuses writes to the subject.
    assert_eq!(
        call(&c, "GET", &format!("{r}/mode"), None).await,
        (200, json!({"mode": "READWRITE"}))
    );
    assert_eq!(
        call(
            &c,
            "PUT",
            &format!("{r}/mode/s"),
            Some(json!({"mode": "READONLY"}))
        )
        .await,
        (200, json!({"mode": "READONLY"}))
    );
    let (st, b) = register(&c, &r, "s", &user_v2()).await;
    assert_eq!((st, error_code(&b)), (422, 42205), "{b}");
    let (st, b) = call(
        &c,
        "PUT",
        &format!("{r}/mode"),
        Some(json!({"mode": "IMPORT"})),
    )
    .await;
    assert_eq!((st, error_code(&b)), (422, 42205), "{b}");
    let (st, b) = call(
        &c,
        "PUT",
        &format!("{r}/mode"),
        Some(json!({"mode": "LOUD"})),
    )
    .await;
    assert_eq!((st, error_code(&b)), (422, 42204), "{b}");
    assert_eq!(
        call(&c, "DELETE", &format!("{r}/mode/s"), None).await,
        (200, json!({"mode": "READONLY"}))
    );

    // JSON Schema: registered with its type, compatibility by the documented subset.
    let j1 = json!({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]});
    let j2 = json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]});
    let j3 = json!({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]});
    let reg_json = |schema: &Value| json!({"schemaType": "JSON", "schema": schema.to_string(), "references": []});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/j/versions"),
        Some(reg_json(&j1)),
    )
    .await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(
        call(
            &c,
            "POST",
            &format!("{r}/subjects/j/versions"),
            Some(reg_json(&j2))
        )
        .await
        .0,
        200
    );
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/j/versions"),
        Some(reg_json(&j3)),
    )
    .await;
    assert_eq!((st, error_code(&b)), (409, 409), "{b}");
    let (_, b) = call(&c, "GET", &format!("{r}/subjects/j/versions/1"), None).await;
    assert_eq!(b["schemaType"], "JSON");
    let bad = json!({"schemaType": "JSON", "schema": "{\"type\":\"strnig\"}"});
    let (st, b) = call(&c, "POST", &format!("{r}/subjects/j/versions"), Some(bad)).await;
    assert_eq!((st, error_code(&b)), (422, 42201), "{b}");

    // Protobuf: .proto text with Confluent's well-known imports; field types checked.
    let p1 = "syntax = \"proto3\";\npackage shop;\nimport \"google/protobuf/timestamp.proto\";\n\
              message Order { string id = 1; int32 qty = 2; google.protobuf.Timestamp at = 3; }";
    let proto = |text: &str| json!({"schemaType": "PROTOBUF", "schema": text});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/p/versions"),
        Some(proto(p1)),
    )
    .await;
    assert_eq!(st, 200, "{b}");
    let widened = p1.replace("int32 qty", "int64 qty");
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/p/versions"),
        Some(proto(&widened)),
    )
    .await;
    assert_eq!(st, 200, "int32 to int64 keeps the wire format: {b}");
    let retyped = p1.replace("int32 qty", "string qty");
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/p/versions"),
        Some(proto(&retyped)),
    )
    .await;
    assert_eq!((st, error_code(&b)), (409, 409), "{b}");
    let (_, b) = call(&c, "GET", &format!("{r}/subjects/p/versions/1"), None).await;
    assert_eq!(b["schemaType"], "PROTOBUF");
    let unknown = p1.replace("google/protobuf/timestamp.proto", "vendor/time.proto");
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/p2/versions"),
        Some(proto(&unknown)),
    )
    .await;
    assert_eq!((st, error_code(&b)), (422, 42201), "{b}");
    let broken = json!({"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\"; message A {"});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/p2/versions"),
        Some(broken),
    )
    .await;
    assert_eq!((st, error_code(&b)), (422, 42201), "{b}");

    // The same API on the main HTTP port, as plain JSON.
    let resp = c
        .get(s.url("/subjects"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(json(resp).await, json!(["j", "p", "s"]));
    let resp = c
        .post(s.url("/subjects/m/versions"))
        .header("content-type", "application/json")
        .body(json!({"schema": "\"string\""}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn references_resolve_and_protect_what_they_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    let address = json!({"type":"record","name":"Address","namespace":"acme",
        "fields":[{"name":"city","type":"string"}]})
    .to_string();
    let (st, a) = register(&c, &r, "address", &address).await;
    assert_eq!(st, 200, "{a}");
    let user = json!({"type":"record","name":"User","namespace":"acme",
        "fields":[{"name":"home","type":"acme.Address"}]})
    .to_string();
    let refs = json!([{"name":"acme.Address","subject":"address","version":1}]);
    let (st, b) = register(&c, &r, "user", &user).await;
    assert_eq!(
        (st, error_code(&b)),
        (422, 42201),
        "without its reference: {b}"
    );
    let body = json!({"schema": user, "references": refs});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/user/versions"),
        Some(body),
    )
    .await;
    assert_eq!(st, 200, "{b}");
    let user_id = b["id"].clone();
    let (_, b) = call(&c, "GET", &format!("{r}/schemas/ids/{user_id}"), None).await;
    assert_eq!(b["references"], refs);
    assert_eq!(
        call(
            &c,
            "GET",
            &format!("{r}/subjects/address/versions/1/referencedby"),
            None
        )
        .await,
        (200, json!([user_id]))
    );
    let (st, b) = call(
        &c,
        "DELETE",
        &format!("{r}/subjects/address/versions/1"),
        None,
    )
    .await;
    assert_eq!((st, error_code(&b)), (422, 42206), "{b}");
    // Protobuf imports name their references.
    let addr_proto = json!({"schemaType": "PROTOBUF",
        "schema": "syntax = \"proto3\"; package acme; message Address { string city = 1; }"});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/address.proto/versions"),
        Some(addr_proto),
    )
    .await;
    assert_eq!(st, 200, "{b}");
    let user_proto = "syntax = \"proto3\"; package acme; import \"address.proto\";\
                      message User { Address home = 1; }";
    let body = json!({"schemaType": "PROTOBUF", "schema": user_proto,
        "references": [{"name": "address.proto", "subject": "address.proto", "version": 1}]});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/user.proto/versions"),
        Some(body),
    )
    .await;
    assert_eq!(st, 200, "{b}");
    let body = json!({"schemaType": "PROTOBUF", "schema": user_proto});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/user2.proto/versions"),
        Some(body),
    )
    .await;
    assert_eq!(
        (st, error_code(&b)),
        (422, 42201),
        "an import that is no reference: {b}"
    );

    let missing = json!({"schema": user,
        "references": [{"name":"acme.Address","subject":"address","version":7}]});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/user2/versions"),
        Some(missing),
    )
    .await;
    assert_eq!((st, error_code(&b)), (422, 42201), "{b}");
}

#[tokio::test]
async fn bounds_are_typed_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, r) = start(
        &tmp.path().join("d"),
        &[
            "--schema-registry-max-schema-bytes",
            "2000",
            "--schema-registry-max-subjects",
            "2",
            "--schema-registry-max-versions",
            "3",
            "--schema-registry-max-compatibility-bytes",
            "400",
        ],
    )
    .await;
    let c = client();
    let big = format!("{{\"type\":\"string\",\"doc\":\"{}\"}}", "x".repeat(2000));
    let (st, b) = register(&c, &r, "a", &big).await;
    assert_eq!((st, error_code(&b)), (422, 42205), "{b}");
    assert!(b["message"].as_str().unwrap().contains("2000"), "{b}");
    // A body past the bound is refused before it is parsed.
    // (100 KB: past the bound of 6 × 2000 + 64 Ki bytes, and small enough to be sent
    // whole before the server answers and closes.)
    let huge = format!("{{\"schema\":\"{}\"}}", "y".repeat(100_000));
    let resp = c
        .post(format!("{r}/subjects/a/versions"))
        .header("content-type", CT)
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);

    let field = |n: usize| -> String {
        let fields: Vec<Value> = (0..n)
            .map(|i| json!({"name": format!("f{i}"), "type": "int", "default": 0}))
            .collect();
        json!({"type":"record","name":"R","fields":fields}).to_string()
    };
    assert_eq!(register(&c, &r, "a", &field(1)).await.0, 200);
    assert_eq!(register(&c, &r, "b", &field(1)).await.0, 200);
    let (st, b) = register(&c, &r, "c", &field(1)).await;
    assert_eq!((st, error_code(&b)), (422, 42205), "subjects: {b}");
    // Transitive checks compare every version: past 400 bytes they are refused.
    assert_eq!(
        call(
            &c,
            "PUT",
            &format!("{r}/config/a"),
            Some(json!({"compatibility": "FULL_TRANSITIVE"}))
        )
        .await
        .0,
        200
    );
    assert_eq!(register(&c, &r, "a", &field(2)).await.0, 200);
    let (st, b) = register(&c, &r, "a", &field(3)).await;
    assert_eq!(
        (st, error_code(&b)),
        (422, 42205),
        "compatibility cost: {b}"
    );
    assert!(b["message"].as_str().unwrap().contains("400"), "{b}");
    assert_eq!(
        call(
            &c,
            "PUT",
            &format!("{r}/config/a"),
            Some(json!({"compatibility": "NONE"}))
        )
        .await
        .0,
        200
    );
    assert_eq!(register(&c, &r, "a", &field(3)).await.0, 200);
    let (st, b) = register(&c, &r, "a", &field(4)).await;
    assert_eq!((st, error_code(&b)), (422, 42205), "versions: {b}");
}

#[tokio::test]
async fn auth_takes_the_bearer_token_or_basic_auth_with_it_as_password() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, r) = start(&tmp.path().join("d"), &["--auth-token", "t0ken"]).await;
    let c = client();
    for base in [r.as_str(), s.base.as_str()] {
        let url = format!("{base}/subjects");
        assert_eq!(c.get(&url).send().await.unwrap().status(), 401);
        let bad = c
            .get(&url)
            .basic_auth("u", Some("nope"))
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 401);
        let bearer = c.get(&url).bearer_auth("t0ken").send().await.unwrap();
        assert_eq!(bearer.status(), 200);
        let basic = c
            .get(&url)
            .basic_auth("any", Some("t0ken"))
            .send()
            .await
            .unwrap();
        assert_eq!(basic.status(), 200);
    }
}

/// Every record of `_schemas`, as (key, value) JSON.
async fn schemas_topic(c: &Client, s: &Server) -> Vec<(Value, Value)> {
    let resp = c
        .get(s.url("/v1/topics/_schemas/records?partition=0&offset=earliest&max_records=1000"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let b = json(resp).await;
    b["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rec| {
            let key = serde_json::from_str(rec["key"].as_str().unwrap()).unwrap();
            let value = match &rec["value"] {
                Value::Null => Value::Null,
                v => serde_json::from_str(v.as_str().unwrap()).unwrap(),
            };
            (key, value)
        })
        .collect()
}

#[tokio::test]
async fn the_schemas_topic_holds_confluents_records_and_survives_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let (mut s, r) = start(&dir, &[]).await;
    let c = client();
    // No write, no topic.
    let topics = json(c.get(s.url("/v1/topics")).send().await.unwrap()).await;
    assert!(!topics.to_string().contains("_schemas"), "{topics}");
    assert_eq!(
        register(&c, &r, "a", &user_v1()).await,
        (200, json!({"id": 1}))
    );
    assert_eq!(
        register(&c, &r, "a", &user_v2()).await,
        (200, json!({"id": 2}))
    );
    let js = json!({"schemaType":"JSON","schema": "{\"type\":\"string\"}"});
    assert_eq!(
        call(&c, "POST", &format!("{r}/subjects/j/versions"), Some(js)).await,
        (200, json!({"id": 3}))
    );
    call(
        &c,
        "PUT",
        &format!("{r}/config"),
        Some(json!({"compatibility":"FULL"})),
    )
    .await;
    call(
        &c,
        "PUT",
        &format!("{r}/config/a"),
        Some(json!({"compatibility":"NONE"})),
    )
    .await;
    call(
        &c,
        "PUT",
        &format!("{r}/mode/j"),
        Some(json!({"mode":"READONLY"})),
    )
    .await;
    call(&c, "DELETE", &format!("{r}/subjects/a/versions/1"), None).await;
    let records = schemas_topic(&c, &s).await;
    let expected = vec![
        (
            json!({"keytype":"SCHEMA","subject":"a","version":1,"magic":1}),
            json!({"subject":"a","version":1,"id":1,"schema":user_v1(),"deleted":false}),
        ),
        (
            json!({"keytype":"SCHEMA","subject":"a","version":2,"magic":1}),
            json!({"subject":"a","version":2,"id":2,"schema":user_v2(),"deleted":false}),
        ),
        (
            json!({"keytype":"SCHEMA","subject":"j","version":1,"magic":1}),
            json!({"subject":"j","version":1,"id":3,"schemaType":"JSON",
                   "schema":"{\"type\":\"string\"}","deleted":false}),
        ),
        (
            json!({"keytype":"CONFIG","subject":null,"magic":0}),
            json!({"compatibilityLevel":"FULL"}),
        ),
        (
            json!({"keytype":"CONFIG","subject":"a","magic":0}),
            json!({"compatibilityLevel":"NONE"}),
        ),
        (
            json!({"keytype":"MODE","subject":"j","magic":0}),
            json!({"mode":"READONLY"}),
        ),
        (
            json!({"keytype":"SCHEMA","subject":"a","version":1,"magic":1}),
            json!({"subject":"a","version":1,"id":1,"schema":user_v1(),"deleted":true}),
        ),
    ];
    assert_eq!(records, expected);
    // The keys' bytes are Confluent's, field order included.
    let resp = c
        .get(s.url("/v1/topics/_schemas/records?partition=0&offset=3&max_records=1"))
        .send()
        .await
        .unwrap();
    let raw = json(resp).await;
    assert_eq!(
        raw["records"][0]["key"],
        r#"{"keytype":"CONFIG","subject":null,"magic":0}"#
    );

    // A restart replays it all.
    assert!(s.sigterm().await.success());
    let (s, r) = start(&dir, &[]).await;
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects/a/versions"), None).await,
        (200, json!([2]))
    );
    assert_eq!(
        call(
            &c,
            "GET",
            &format!("{r}/subjects/a/versions?deleted=true"),
            None
        )
        .await,
        (200, json!([1, 2]))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/config"), None).await,
        (200, json!({"compatibilityLevel":"FULL"}))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/config/a"), None).await,
        (200, json!({"compatibilityLevel":"NONE"}))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/mode/j"), None).await,
        (200, json!({"mode":"READONLY"}))
    );
    let (_, b) = call(&c, "GET", &format!("{r}/schemas/ids/3"), None).await;
    assert_eq!(b["schemaType"], "JSON");
    let next = json!({"type":"record","name":"N","fields":[]}).to_string();
    assert_eq!(register(&c, &r, "n", &next).await, (200, json!({"id": 4})));

    // Records written by another registry (or imported through Kafka) are read as-is.
    let imported = json!({"records":[{
        "key": r#"{"keytype":"SCHEMA","subject":"imported","version":1,"magic":1}"#,
        "value": json!({"subject":"imported","version":1,"id":40,"schema":"\"long\"","deleted":false}).to_string()
    }]});
    let resp = c
        .post(s.url("/v1/topics/_schemas/records"))
        .json(&imported)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    assert_eq!(
        call(&c, "GET", &format!("{r}/schemas/ids/40"), None).await,
        (200, json!({"schema":"\"long\""}))
    );
    assert_eq!(
        register(&c, &r, "n2", "\"bytes\"").await,
        (200, json!({"id": 41}))
    );

    // The topic deleted by a client: the registry starts over from what it holds now,
    // and its ids go on past every id it handed out or saw.
    let resp = c.delete(s.url("/v1/topics/_schemas")).send().await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects"), None).await,
        (200, json!([]))
    );
    assert_eq!(
        register(&c, &r, "again", "\"int\"").await,
        (200, json!({"id": 42}))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects"), None).await,
        (200, json!(["again"]))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_during_registrations_loses_no_acknowledged_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let (mut s, r) = start(&dir, &[]).await;
    let c = client();
    let acked: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let (count_tx, mut count) = tokio::sync::watch::channel(0usize);
    let count_tx = Arc::new(count_tx);
    let mut workers = Vec::new();
    for w in 0..4 {
        let (c, r, acked, count_tx) = (c.clone(), r.clone(), acked.clone(), count_tx.clone());
        workers.push(tokio::spawn(async move {
            for n in 0.. {
                let subject = format!("w{w}-{n}");
                let schema = json!({"type":"record","name":format!("R{w}x{n}"),"fields":[]});
                let Ok(resp) = c
                    .post(format!("{r}/subjects/{subject}/versions"))
                    .header("content-type", CT)
                    .body(json!({"schema": schema.to_string()}).to_string())
                    .send()
                    .await
                else {
                    return;
                };
                if resp.status() != 200 {
                    return;
                }
                let Ok(b) = resp.json::<Value>().await else {
                    return;
                };
                let mut acked = acked.lock().unwrap();
                acked.insert(subject, b["id"].as_u64().unwrap());
                count_tx.send_replace(acked.len());
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(60), count.wait_for(|n| *n >= 40))
        .await
        .expect("registrations are too slow")
        .unwrap();
    s.sigkill().await;
    for w in workers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let (_s, r) = start(&dir, &[]).await;
    let mut ids = std::collections::BTreeSet::new();
    for (subject, id) in &acked {
        let (st, b) = call(
            &c,
            "GET",
            &format!("{r}/subjects/{subject}/versions/1"),
            None,
        )
        .await;
        assert_eq!(st, 200, "{subject} was acknowledged: {b}");
        assert_eq!(b["id"].as_u64(), Some(*id), "{subject}");
        assert!(ids.insert(*id), "id {id} given twice");
    }
}

#[tokio::test]
async fn import_mode_keeps_the_ids_and_versions_it_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    assert_eq!(
        call(
            &c,
            "PUT",
            &format!("{r}/mode"),
            Some(json!({"mode": "IMPORT"}))
        )
        .await,
        (200, json!({"mode": "IMPORT"}))
    );
    let body = json!({"schema": user_v1(), "id": 100, "version": 5});
    assert_eq!(
        call(
            &c,
            "POST",
            &format!("{r}/subjects/imported/versions"),
            Some(body)
        )
        .await,
        (200, json!({"id": 100}))
    );
    let (_, b) = call(
        &c,
        "GET",
        &format!("{r}/subjects/imported/versions/5"),
        None,
    )
    .await;
    assert_eq!(
        (b["id"].as_u64(), b["version"].as_u64()),
        (Some(100), Some(5)),
        "{b}"
    );
    let other = json!({"schema": user_v2(), "id": 101, "version": 5});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/imported/versions"),
        Some(other),
    )
    .await;
    assert_eq!((st, error_code(&b)), (422, 42205), "{b}");
    assert_eq!(
        call(
            &c,
            "PUT",
            &format!("{r}/mode"),
            Some(json!({"mode": "READWRITE"}))
        )
        .await
        .0,
        200
    );
    // Outside IMPORT an id cannot be given; a new schema gets one past the largest.
    let given = json!({"schema": user_v2(), "id": 7});
    let (st, b) = call(
        &c,
        "POST",
        &format!("{r}/subjects/imported/versions"),
        Some(given),
    )
    .await;
    assert_eq!((st, error_code(&b)), (422, 42205), "{b}");
    assert_eq!(
        register(&c, &r, "imported", &user_v2()).await,
        (200, json!({"id": 101}))
    );
    let (_, b) = call(
        &c,
        "GET",
        &format!("{r}/subjects/imported/versions/latest"),
        None,
    )
    .await;
    assert_eq!(b["version"], 6);
}

/// Sets `subject`'s compatibility level.
async fn set_level(c: &Client, r: &str, subject: &str, level: &str) {
    let body = json!({"compatibility": level});
    let (st, b) = call(c, "PUT", &format!("{r}/config/{subject}"), Some(body)).await;
    assert_eq!(st, 200, "{subject} {level}: {b}");
}

/// Whether any record of `_schemas` has a key naming `subject`.
async fn topic_names(c: &Client, s: &Server, subject: &str) -> bool {
    schemas_topic(c, s)
        .await
        .iter()
        .any(|(key, _)| key["subject"] == subject)
}

#[tokio::test]
async fn a_deleted_newest_id_is_never_given_again_after_compaction_and_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    // Retention and compaction run every 10 ms.
    let flags = ["--log-retention-check-interval-ms", "10"];
    let (mut s, r) = start(&dir, &flags).await;
    let c = client();
    assert_eq!(register(&c, &r, "a", &user_v1()).await.1, json!({"id": 1}));
    assert_eq!(register(&c, &r, "b", &user_v2()).await.1, json!({"id": 2}));
    // Every append 1 ms past its segment's first rolls it; tombstones go at once.
    let config = json!({"segment_ms": 1, "delete_retention_ms": 0, "min_compaction_lag_ms": 0});
    let resp = common::patch_json(&c, &s, "/v1/topics/_schemas", &config).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let b1 = format!("{r}/subjects/b/versions/1");
    assert_eq!(call(&c, "DELETE", &b1, None).await, (200, json!(1)));
    let permanent = format!("{b1}?permanent=true");
    assert_eq!(call(&c, "DELETE", &permanent, None).await, (200, json!(1)));
    assert!(topic_names(&c, &s, "b").await);
    // Writes after the tombstone seal its segment; the cleaner then removes every
    // record of id 2.
    let mut n = 0;
    common::until("compaction removes the records of id 2", async || {
        n += 1;
        let level = if n % 2 == 0 { "FULL" } else { "NONE" };
        set_level(&c, &r, "a", level).await;
        !topic_names(&c, &s, "b").await
    })
    .await;
    assert!(s.sigterm().await.success());

    let (mut s, r) = start(&dir, &flags).await;
    assert_eq!(
        call(&c, "GET", &format!("{r}/schemas/ids/2"), None).await.0,
        404
    );
    let fresh = json!({"type":"record","name":"Fresh","fields":[]}).to_string();
    assert_eq!(register(&c, &r, "c", &fresh).await.1, json!({"id": 3}));
    // The data directory keeps it: `schema-registry/max-id`, a state file.
    let kept = std::fs::read(dir.join("schema-registry/max-id")).unwrap();
    assert!(kept.starts_with(b"KSTF"), "{kept:?}");
    assert!(String::from_utf8_lossy(&kept).contains(r#""max_id":3"#));
    // Nor after `_schemas` itself is deleted (by a client), and a restart.
    let resp = c.delete(s.url("/v1/topics/_schemas")).send().await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert!(s.sigterm().await.success());
    let (_s, r) = start(&dir, &flags).await;
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects"), None).await.1,
        json!([])
    );
    assert_eq!(register(&c, &r, "a", &user_v1()).await.1, json!({"id": 4}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_answers_50001_keeps_reads_and_writes_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(disk) = common::small_disk::small_disk_or_skip(tmp.path(), "registry disk full")
    else {
        return;
    };
    // The data directory on the small disk; the server's log beside it, off it.
    let dir = tmp.path().join("d");
    std::fs::create_dir(disk.mount.join("d")).unwrap();
    std::os::unix::fs::symlink(disk.mount.join("d"), &dir).unwrap();
    let (mut s, r) = start(&dir, &[]).await;
    let c = client();
    // A schema of 64 KiB: its soft delete rewrites it whole.
    let big = json!({"type":"record","name":"Big","doc":"x".repeat(64 << 10),"fields":[]});
    assert_eq!(
        register(&c, &r, "big", &big.to_string()).await.1,
        json!({"id": 1})
    );
    common::small_disk::fill(&disk.mount);

    // A new id needs the id's state file written, a soft delete 64 KiB appended.
    let (st, b) = register(&c, &r, "new", &user_v1()).await;
    assert_eq!((st, error_code(&b)), (500, 50001), "{b}");
    assert!(b["message"].as_str().unwrap().contains("max-id"), "{b}");
    let big_v1 = format!("{r}/subjects/big/versions/1");
    let (st, b) = call(&c, "DELETE", &big_v1, None).await;
    assert_eq!((st, error_code(&b)), (500, 50001), "{b}");
    assert!(b["message"].as_str().unwrap().contains("_schemas"), "{b}");
    // Reads are served all along.
    let (st, b) = call(&c, "GET", &format!("{r}/subjects/big/versions"), None).await;
    assert_eq!((st, b), (200, json!([1])));
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects"), None).await.1,
        json!(["big"])
    );

    // Space again: the same writes succeed, the failed id was never handed out.
    std::fs::remove_file(disk.mount.join("filler")).unwrap();
    assert_eq!(
        register(&c, &r, "new", &user_v1()).await,
        (200, json!({"id": 2}))
    );
    assert_eq!(call(&c, "DELETE", &big_v1, None).await, (200, json!(1)));
    assert!(s.sigterm().await.success());
    let (_s, r) = start(&dir, &[]).await;
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects"), None).await.1,
        json!(["new"])
    );
    let deleted = format!("{r}/subjects/big/versions?deleted=true");
    assert_eq!(call(&c, "GET", &deleted, None).await.1, json!([1]));
    drop(disk);
}

#[tokio::test]
async fn a_schemas_topic_of_several_partitions_answers_50001_until_it_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    // Another client creates `_schemas` with 3 partitions before the registry writes.
    common::create_topic(&c, &s, "_schemas", json!({"partitions": 3})).await;
    let (st, b) = register(&c, &r, "a", &user_v1()).await;
    assert_eq!((st, error_code(&b)), (500, 50001), "{b}");
    assert!(
        b["message"].as_str().unwrap().contains("3 partitions"),
        "{b}"
    );
    let (st, b) = call(&c, "GET", &format!("{r}/subjects"), None).await;
    assert_eq!((st, error_code(&b)), (500, 50001), "{b}");
    let resp = c.delete(s.url("/v1/topics/_schemas")).send().await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(
        register(&c, &r, "a", &user_v1()).await,
        (200, json!({"id": 1}))
    );
}
