//! The schema registry of the real binary, over HTTP on its own listener
//! (`--schema-registry-bind`) and on the main port: register, look up (`normalize`,
//! null data contracts), ids, versions, deletes, configs, modes, each compatibility
//! level deciding registrations, Protobuf's well-known imports, `GET /schemas` paging,
//! auth, bounds, the `_schemas` records in Confluent's format, what survives a restart
//! or a SIGKILL, ids never given twice (compaction, a deleted topic), and 50001 when
//! the log cannot be written (a full disk) or used.

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
    // The same schema under another subject keeps its id; the subject soft-deleted.
    assert_eq!(
        register(&c, &r, "gone", &user_v1()).await,
        (200, json!({"id": 1}))
    );
    assert_eq!(
        call(&c, "DELETE", &format!("{r}/subjects/gone"), None).await,
        (200, json!([1]))
    );
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
        (
            json!({"keytype":"SCHEMA","subject":"gone","version":1,"magic":1}),
            json!({"subject":"gone","version":1,"id":1,"schema":user_v1(),"deleted":false}),
        ),
        (
            json!({"keytype":"DELETE_SUBJECT","subject":"gone","magic":0}),
            json!({"subject":"gone","version":1}),
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
    // The subject's soft delete too: hidden, listed with the deleted, and refused again.
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects"), None).await,
        (200, json!(["a", "j"]))
    );
    assert_eq!(
        call(&c, "GET", &format!("{r}/subjects?deleted=true"), None).await,
        (200, json!(["a", "gone", "j"]))
    );
    let (st, b) = call(&c, "GET", &format!("{r}/subjects/gone/versions"), None).await;
    assert_eq!((st, error_code(&b)), (404, 40401), "{b}");
    let (st, b) = call(&c, "DELETE", &format!("{r}/subjects/gone"), None).await;
    assert_eq!((st, error_code(&b)), (404, 40404), "{b}");
    assert_eq!(
        call(
            &c,
            "GET",
            &format!("{r}/subjects/gone/versions/1?deleted=true"),
            None
        )
        .await
        .1["id"],
        1
    );
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

/// An Avro record `Evo` with `fields`: (name, type, default).
fn evo(fields: &[(&str, &str, Option<Value>)]) -> String {
    let fields: Vec<Value> = fields
        .iter()
        .map(|(name, ty, default)| match default {
            Some(d) => json!({"name": name, "type": ty, "default": d}),
            None => json!({"name": name, "type": ty}),
        })
        .collect();
    json!({"type": "record", "name": "Evo", "fields": fields}).to_string()
}

const LEVELS: [&str; 7] = [
    "BACKWARD",
    "FORWARD",
    "FULL",
    "NONE",
    "BACKWARD_TRANSITIVE",
    "FORWARD_TRANSITIVE",
    "FULL_TRANSITIVE",
];

#[tokio::test]
async fn each_compatibility_level_decides_registrations() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    // Against one earlier version, a level and its transitive form decide alike:
    // BACKWARD (the new schema reads old data) refuses a field added without a
    // default, FORWARD (old readers read new data) a field removed that has none.
    let base = evo(&[("a", "int", None), ("c", "int", None)]);
    let changes = [
        (
            "add-default",
            evo(&[
                ("a", "int", None),
                ("c", "int", None),
                ("d", "int", Some(json!(0))),
            ]),
        ),
        (
            "add-required",
            evo(&[("a", "int", None), ("c", "int", None), ("d", "int", None)]),
        ),
        ("drop-c", evo(&[("a", "int", None)])),
    ];
    for level in LEVELS {
        let backward = level.starts_with("BACKWARD") || level.starts_with("FULL");
        let forward = level.starts_with("FORWARD") || level.starts_with("FULL");
        for (name, change) in &changes {
            let subject = format!("{}-{name}", level.to_lowercase());
            set_level(&c, &r, &subject, level).await;
            assert_eq!(register(&c, &r, &subject, &base).await.0, 200);
            let refused = match *name {
                "add-required" => backward,
                "drop-c" => forward,
                _ => false,
            };
            let (st, b) = register(&c, &r, &subject, change).await;
            let want = if refused { (409, 409) } else { (200, 0) };
            let got = (st, if st == 200 { 0 } else { error_code(&b) });
            assert_eq!(got, want, "{level} {name}: {b}");
        }
    }

    // v3 is compatible both ways with v2 but with v1 in neither: only the transitive
    // levels, which check every live version, refuse it.
    let v1 = evo(&[("a", "int", None), ("b", "int", Some(json!(0)))]);
    let v2 = evo(&[("a", "int", None)]);
    let v3 = evo(&[("a", "int", None), ("b", "string", Some(json!("")))]);
    for level in LEVELS {
        let subject = format!("{}-transitive", level.to_lowercase());
        set_level(&c, &r, &subject, level).await;
        assert_eq!(register(&c, &r, &subject, &v1).await.0, 200, "{level}");
        assert_eq!(register(&c, &r, &subject, &v2).await.0, 200, "{level}");
        let every = format!("{r}/compatibility/subjects/{subject}/versions?verbose=true");
        let (_, check) = call(&c, "POST", &every, Some(json!({"schema": v3}))).await;
        let (st, b) = register(&c, &r, &subject, &v3).await;
        if level.ends_with("_TRANSITIVE") {
            assert_eq!((st, error_code(&b)), (409, 409), "{level}: {b}");
            assert!(b["message"].as_str().unwrap().contains("version 1"), "{b}");
            assert_eq!(check["is_compatible"], false, "{level}: {check}");
        } else {
            assert_eq!(st, 200, "{level}: {b}");
            assert_eq!(check["is_compatible"], true, "{level}: {check}");
        }
    }
    // A soft-deleted version is no longer checked.
    let subject = "backward_transitive-transitive";
    let path = format!("{r}/subjects/{subject}/versions/1");
    assert_eq!(call(&c, "DELETE", &path, None).await, (200, json!(1)));
    assert_eq!(register(&c, &r, subject, &v3).await.0, 200);
}

/// `AVRO_CANONICAL`: the Avro order schema of the normalize test as stored.
const AVRO_CANONICAL: &str = concat!(
    r#"{"type":"record","namespace":"acme","name":"Order","#,
    r#""fields":[{"name":"id","type":"string"}]}"#
);

#[tokio::test]
async fn normalize_stores_the_canonical_form_and_finds_equivalent_texts() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    let post = |path: String, schema: &str, ty: &str| {
        let (c, body) = (c.clone(), json!({"schema": schema, "schemaType": ty}));
        async move { call(&c, "POST", &path, Some(body)).await }
    };
    // Avro: the namespace apart from the name, keys out of order, a type as an object.
    let loose = r#"{ "fields": [ {"type": {"type": "string"}, "name": "id"} ],
                     "namespace": "acme", "name": "Order", "type": "record" }"#;
    let other = r#"{"type":"record","name":"acme.Order","fields":[{"name":"id","type":"string"}]}"#;
    let canonical = AVRO_CANONICAL;
    let versions = |s: &str, q: &str| format!("{r}/subjects/{s}/versions{q}");
    let normalized = "?normalize=true";
    let (st, b) = post(versions("orders", normalized), loose, "AVRO").await;
    assert_eq!((st, b), (200, json!({"id": 1})));
    let (_, b) = call(&c, "GET", &format!("{r}/schemas/ids/1"), None).await;
    assert_eq!(b["schema"], canonical, "stored as apache-avro writes it");
    // Equivalent texts, normalized, are the same schema; the canonical text is even
    // without normalizing.
    assert_eq!(
        post(versions("orders", normalized), other, "AVRO").await.1,
        json!({"id": 1})
    );
    assert_eq!(
        post(versions("orders", normalized), loose, "AVRO").await.1,
        json!({"id": 1})
    );
    assert_eq!(
        post(versions("orders", ""), canonical, "AVRO").await.1,
        json!({"id": 1})
    );
    assert_eq!(
        call(&c, "GET", &versions("orders", ""), None).await.1,
        json!([1])
    );
    // Not normalized, the loose text is another schema.
    assert_eq!(
        post(versions("raw", ""), loose, "AVRO").await.1,
        json!({"id": 2})
    );
    // Look-up and compatibility normalize too.
    let subject = format!("{r}/subjects/orders");
    let (st, b) = post(format!("{subject}{normalized}"), other, "AVRO").await;
    assert_eq!(
        (st, &b["id"], &b["version"]),
        (200, &json!(1), &json!(1)),
        "{b}"
    );
    let (st, b) = post(subject.clone(), other, "AVRO").await;
    assert_eq!((st, error_code(&b)), (404, 40403), "{b}");
    let check = format!("{r}/compatibility/subjects/orders/versions/latest{normalized}");
    assert_eq!(
        post(check, loose, "AVRO").await,
        (200, json!({"is_compatible": true}))
    );

    // Protobuf: comments and whitespace go, the tokens stay, one space apart.
    let proto = "syntax = \"proto3\";\n// shop orders\npackage shop;\n\n\
                 message   Order {\n  string id = 1;   // its id\n  int64 qty = 2;\n}\n";
    let tight = "syntax=\"proto3\";package shop;message Order{string id=1;int64 qty=2;}";
    let (st, b) = post(versions("orders-proto", normalized), proto, "PROTOBUF").await;
    assert_eq!(st, 200, "{b}");
    let id = b["id"].clone();
    let (_, b) = call(&c, "GET", &format!("{r}/schemas/ids/{id}"), None).await;
    assert_eq!(
        b["schema"],
        "syntax = \"proto3\" ; package shop ; message Order { string id = 1 ; int64 qty = 2 ; }"
    );
    let (_, b) = post(versions("orders-proto", normalized), tight, "PROTOBUF").await;
    assert_eq!(b["id"], id);
    let (st, b) = post(
        format!("{r}/subjects/orders-proto{normalized}"),
        tight,
        "PROTOBUF",
    )
    .await;
    assert_eq!((st, &b["version"]), (200, &json!(1)), "{b}");
}

#[tokio::test]
async fn null_or_empty_data_contracts_are_accepted_on_register_and_look_up() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    let register_at = format!("{r}/subjects/dc/versions");
    let lookup_at = format!("{r}/subjects/dc");
    let forms = [
        json!({"metadata": null, "ruleSet": null}),
        json!({"metadata": {}, "ruleSet": {}}),
        json!({"metadata": null, "ruleSet": {}}),
        json!({"metadata": {"properties": null}, "ruleSet": {"domainRules": null}}),
    ];
    for (i, form) in forms.iter().enumerate() {
        let mut body = form.clone();
        body["schema"] = json!(user_v1());
        assert_eq!(
            call(&c, "POST", &register_at, Some(body.clone())).await,
            (200, json!({"id": 1})),
            "{body}"
        );
        let (st, b) = call(&c, "POST", &lookup_at, Some(body)).await;
        assert_eq!(
            (st, &b["id"], &b["version"]),
            (200, &json!(1), &json!(1)),
            "{i}: {b}"
        );
    }
    // Data contracts with content are not served.
    for form in [
        json!({"metadata": {"properties": {"owner": "team-a"}}}),
        json!({"ruleSet": {"domainRules": [{"name": "r", "kind": "CONDITION"}]}}),
    ] {
        let mut body = form.clone();
        body["schema"] = json!(user_v2());
        let (st, b) = call(&c, "POST", &register_at, Some(body.clone())).await;
        assert_eq!((st, error_code(&b)), (422, 42201), "{form}: {b}");
        let (st, b) = call(&c, "POST", &lookup_at, Some(body)).await;
        assert_eq!((st, error_code(&b)), (422, 42201), "{form}: {b}");
    }
}

#[tokio::test]
async fn protobuf_schemas_import_every_well_known_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    // (import, a type or option it provides)
    let table = [
        ("google/protobuf/any.proto", "google.protobuf.Any"),
        ("google/protobuf/api.proto", "google.protobuf.Api"),
        (
            "google/protobuf/descriptor.proto",
            "google.protobuf.FileDescriptorProto",
        ),
        ("google/protobuf/duration.proto", "google.protobuf.Duration"),
        ("google/protobuf/empty.proto", "google.protobuf.Empty"),
        (
            "google/protobuf/field_mask.proto",
            "google.protobuf.FieldMask",
        ),
        (
            "google/protobuf/source_context.proto",
            "google.protobuf.SourceContext",
        ),
        ("google/protobuf/struct.proto", "google.protobuf.Struct"),
        (
            "google/protobuf/timestamp.proto",
            "google.protobuf.Timestamp",
        ),
        ("google/protobuf/type.proto", "google.protobuf.Type"),
        (
            "google/protobuf/wrappers.proto",
            "google.protobuf.StringValue",
        ),
        (
            "google/type/calendar_period.proto",
            "google.type.CalendarPeriod",
        ),
        ("google/type/color.proto", "google.type.Color"),
        ("google/type/date.proto", "google.type.Date"),
        ("google/type/datetime.proto", "google.type.DateTime"),
        ("google/type/dayofweek.proto", "google.type.DayOfWeek"),
        ("google/type/decimal.proto", "google.type.Decimal"),
        ("google/type/expr.proto", "google.type.Expr"),
        ("google/type/fraction.proto", "google.type.Fraction"),
        ("google/type/interval.proto", "google.type.Interval"),
        ("google/type/latlng.proto", "google.type.LatLng"),
        (
            "google/type/localized_text.proto",
            "google.type.LocalizedText",
        ),
        ("google/type/money.proto", "google.type.Money"),
        ("google/type/month.proto", "google.type.Month"),
        ("google/type/phone_number.proto", "google.type.PhoneNumber"),
        (
            "google/type/postal_address.proto",
            "google.type.PostalAddress",
        ),
        ("google/type/quaternion.proto", "google.type.Quaternion"),
        ("google/type/timeofday.proto", "google.type.TimeOfDay"),
        ("confluent/type/decimal.proto", "confluent.type.Decimal"),
        (
            "confluent/meta.proto",
            "option (confluent.message_meta) = { doc: \"meta\" };",
        ),
    ];
    for (i, (import, uses)) in table.iter().enumerate() {
        let body = match uses.strip_prefix("option") {
            Some(_) => format!("{uses} string id = 1;"),
            None => format!("string id = 1; {uses} value = 2;"),
        };
        let schema = format!(
            "syntax = \"proto3\";\npackage wk;\nimport \"{import}\";\nmessage M{i} {{ {body} }}"
        );
        let body = json!({"schemaType": "PROTOBUF", "schema": schema});
        let (st, b) = call(
            &c,
            "POST",
            &format!("{r}/subjects/wk-{i}/versions"),
            Some(body),
        )
        .await;
        assert_eq!(st, 200, "{import}: {b}");
        assert_eq!(b["id"], i + 1, "{import}");
    }
    // Only those: a file of those directories that Confluent does not provide is refused.
    for import in [
        "google/protobuf/nope.proto",
        "google/type/nope.proto",
        "confluent/other.proto",
    ] {
        let schema =
            format!("syntax = \"proto3\"; import \"{import}\"; message M {{ int32 x = 1; }}");
        let body = json!({"schemaType": "PROTOBUF", "schema": schema});
        let (st, b) = call(
            &c,
            "POST",
            &format!("{r}/subjects/wk-bad/versions"),
            Some(body),
        )
        .await;
        assert_eq!((st, error_code(&b)), (422, 42201), "{import}: {b}");
    }
}

#[tokio::test]
async fn get_schemas_takes_latest_only_deleted_offset_and_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let (_s, r) = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    let text = |n: usize| json!({"type":"record","name":format!("S{n}"),"fields":[]}).to_string();
    // a: versions 1, 2 (soft-deleted), 3; b: 1; c: 1 and 2 (soft-deleted).
    set_level(&c, &r, "a", "NONE").await;
    set_level(&c, &r, "c", "NONE").await;
    for (subject, n) in [("a", 1), ("a", 2), ("a", 3), ("b", 4), ("c", 5), ("c", 6)] {
        assert_eq!(register(&c, &r, subject, &text(n)).await.0, 200);
    }
    for path in ["a/versions/2", "c/versions/2"] {
        assert_eq!(
            call(&c, "DELETE", &format!("{r}/subjects/{path}"), None)
                .await
                .0,
            200
        );
    }
    let listed = async |query: &str| -> Vec<(String, u64)> {
        let (st, b) = call(&c, "GET", &format!("{r}/schemas{query}"), None).await;
        assert_eq!(st, 200, "{query}: {b}");
        b.as_array()
            .unwrap()
            .iter()
            .map(|v| {
                let id = v["id"].as_u64().unwrap();
                assert_eq!(v["schema"], text(id as usize), "{query}: {v}");
                (
                    format!("{}{}", v["subject"].as_str().unwrap(), v["version"]),
                    id,
                )
            })
            .collect()
    };
    let pairs = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
        v.iter().map(|(s, id)| (s.to_string(), *id)).collect()
    };
    let live = pairs(&[("a1", 1), ("a3", 3), ("b1", 4), ("c1", 5)]);
    assert_eq!(listed("").await, live);
    assert_eq!(
        listed("?deleted=true").await,
        pairs(&[
            ("a1", 1),
            ("a2", 2),
            ("a3", 3),
            ("b1", 4),
            ("c1", 5),
            ("c2", 6)
        ])
    );
    // The newest live version of each subject; with deleted, the newest of all.
    assert_eq!(
        listed("?latestOnly=true").await,
        pairs(&[("a3", 3), ("b1", 4), ("c1", 5)])
    );
    assert_eq!(
        listed("?latestOnly=true&deleted=true").await,
        pairs(&[("a3", 3), ("b1", 4), ("c2", 6)])
    );
    // A page: offset skips, limit bounds (0 or less: no bound), past the end: empty.
    assert_eq!(listed("?offset=1&limit=2").await, live[1..3]);
    assert_eq!(listed("?offset=3").await, live[3..]);
    assert_eq!(listed("?limit=0").await, live);
    assert_eq!(listed("?limit=-1&offset=-1").await, live);
    assert_eq!(listed("?offset=9").await, []);
    assert_eq!(
        listed("?subjectPrefix=a&latestOnly=true&deleted=true&offset=0&limit=1").await,
        pairs(&[("a3", 3)])
    );
    for bad in ["?limit=ten", "?offset=1.5", "?latestOnly=yes", "?deleted=1"] {
        let (st, b) = call(&c, "GET", &format!("{r}/schemas{bad}"), None).await;
        assert_eq!((st, error_code(&b)), (400, 400), "{bad}: {b}");
    }
}

/// Whether `method url` with `body` was answered 200.
async fn ok(c: &Client, method: reqwest::Method, url: String, body: Option<Value>) -> bool {
    let mut req = c.request(method, url);
    if let Some(b) = body {
        req = req.header("content-type", CT).body(b.to_string());
    }
    matches!(req.send().await, Ok(resp) if resp.status() == 200)
}

/// How far a subject of the kill test got: registered, soft-deleted, deleted for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Registered,
    SoftDeleted,
    Gone,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_during_configs_and_deletes_loses_no_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let (mut s, r) = start(&dir, &[]).await;
    let c = client();
    // subject -> ("config", level) or ("mode", mode), acknowledged.
    let settings: Arc<Mutex<BTreeMap<String, (&str, &str)>>> = Arc::default();
    // subject -> (deleted by version?, the last stage acknowledged).
    let deletes: Arc<Mutex<BTreeMap<String, (bool, Stage)>>> = Arc::default();
    let (count_tx, mut count) = tokio::sync::watch::channel(0usize);
    let count_tx = Arc::new(count_tx);
    let mut workers = Vec::new();
    for w in 0..2 {
        let (c, r, settings, count_tx) = (c.clone(), r.clone(), settings.clone(), count_tx.clone());
        workers.push(tokio::spawn(async move {
            for n in 0.. {
                let subject = format!("set{w}-{n}");
                let (kind, value, body) = if n % 2 == 0 {
                    let level = LEVELS[n % LEVELS.len()];
                    ("config", level, json!({"compatibility": level}))
                } else {
                    ("mode", "READONLY", json!({"mode": "READONLY"}))
                };
                let url = format!("{r}/{kind}/{subject}");
                if !ok(&c, reqwest::Method::PUT, url, Some(body)).await {
                    return;
                }
                let mut settings = settings.lock().unwrap();
                settings.insert(subject, (kind, value));
                count_tx.send_modify(|n| *n += 1);
            }
        }));
    }
    for w in 0..2 {
        let (c, r, deletes, count_tx) = (c.clone(), r.clone(), deletes.clone(), count_tx.clone());
        workers.push(tokio::spawn(async move {
            for n in 0.. {
                let subject = format!("del{w}-{n}");
                let by_version = n % 2 == 1;
                let schema = json!({"type":"record","name":format!("D{w}x{n}"),"fields":[]});
                let base = format!("{r}/subjects/{subject}");
                let target = if by_version {
                    format!("{base}/versions/1")
                } else {
                    base.clone()
                };
                let steps = [
                    (
                        reqwest::Method::POST,
                        format!("{base}/versions"),
                        Stage::Registered,
                    ),
                    (reqwest::Method::DELETE, target.clone(), Stage::SoftDeleted),
                    (
                        reqwest::Method::DELETE,
                        format!("{target}?permanent=true"),
                        Stage::Gone,
                    ),
                ];
                for (method, url, stage) in steps {
                    let body =
                        (stage == Stage::Registered).then(|| json!({"schema": schema.to_string()}));
                    if !ok(&c, method, url, body).await {
                        return;
                    }
                    deletes
                        .lock()
                        .unwrap()
                        .insert(subject.clone(), (by_version, stage));
                    count_tx.send_modify(|n| *n += 1);
                }
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(60), count.wait_for(|n| *n >= 120))
        .await
        .expect("writes are too slow")
        .unwrap();
    s.sigkill().await;
    for w in workers {
        w.await.unwrap();
    }
    let (settings, deletes) = (
        settings.lock().unwrap().clone(),
        deletes.lock().unwrap().clone(),
    );
    let (_s, r) = start(&dir, &[]).await;
    for (subject, (kind, value)) in &settings {
        let field = if *kind == "config" {
            "compatibilityLevel"
        } else {
            "mode"
        };
        let (st, b) = call(&c, "GET", &format!("{r}/{kind}/{subject}"), None).await;
        assert_eq!(
            (st, &b[field]),
            (200, &json!(value)),
            "{subject} was acknowledged"
        );
    }
    let mut gone = 0;
    for (subject, (by_version, acked)) in &deletes {
        let live = call(&c, "GET", &format!("{r}/subjects/{subject}/versions"), None).await;
        let all = format!("{r}/subjects/{subject}/versions?deleted=true");
        let any = call(&c, "GET", &all, None).await;
        // A write in flight at the kill may have been stored: at least the stage
        // acknowledged, at most the next.
        let now = match (live.0, any.0) {
            (200, _) => Stage::Registered,
            (404, 200) => Stage::SoftDeleted,
            (404, 404) => Stage::Gone,
            other => panic!("{subject}: {other:?} {live:?} {any:?}"),
        };
        assert!(
            now >= *acked,
            "{subject} ({by_version}): acknowledged {acked:?}, now {now:?}"
        );
        assert!(
            now as usize <= *acked as usize + 1,
            "{subject}: {acked:?} -> {now:?}"
        );
        gone += usize::from(*acked == Stage::Gone);
    }
    let summary = format!(
        "{} settings and {} subjects' deletes ({gone} permanent) acknowledged",
        settings.len(),
        deletes.len()
    );
    assert!(settings.len() >= 10 && gone >= 10, "{summary}");
    eprintln!("sigkill: {summary}, every one found after the restart");
}
