//! `POST /schemas/decode` of the real binary: records in Confluent's wire format (magic
//! byte 0, a 4-byte big-endian schema id, the payload; Protobuf's with message indexes)
//! decoded with the Avro, JSON Schema and Protobuf schemas their ids name, and the
//! refusals: not the wire format, an unknown id, a payload the schema does not read.

mod common;

use common::{client, fresh_server, json};
use serde_json::{Value, json};

/// Registers `schema` under `subject`; its id.
async fn register(c: &reqwest::Client, url: &str, subject: &str, body: Value) -> u32 {
    let r = c
        .post(format!("{url}/subjects/{subject}/versions"))
        .header("content-type", "application/vnd.schemaregistry.v1+json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let id = json(r).await["id"].as_u64().unwrap();
    u32::try_from(id).unwrap()
}

/// Decodes `record`: (status, body).
async fn decode(c: &reqwest::Client, url: &str, record: Vec<u8>) -> (u16, Value) {
    let r = c
        .post(format!("{url}/schemas/decode"))
        .header("content-type", "application/octet-stream")
        .body(record)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    assert_eq!(
        r.headers()["content-type"],
        "application/vnd.schemaregistry.v1+json"
    );
    (status, json(r).await)
}

fn framed(id: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Avro's zig-zag varint of a long.
fn avro_long(n: i64, out: &mut Vec<u8>) {
    let mut z = ((n << 1) ^ (n >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

#[tokio::test]
async fn records_decode_by_the_schema_id_they_carry() {
    let (_tmp, s, _) = fresh_server(&[]).await;
    let c = client();
    let url = s.url("");
    let url = url.trim_end_matches('/');

    // Avro: {"id": "o-1", "qty": -3, "note": null}.
    let avro = json!({"type":"record","name":"Order","fields":[
        {"name":"id","type":"string"},
        {"name":"qty","type":"int"},
        {"name":"note","type":["null","string"],"default":null}
    ]});
    let avro_id = register(&c, url, "orders-value", json!({"schema": avro.to_string()})).await;
    let mut payload = Vec::new();
    avro_long(3, &mut payload);
    payload.extend_from_slice(b"o-1");
    avro_long(-3, &mut payload);
    avro_long(0, &mut payload); // the union's branch 0: null
    let (status, body) = decode(&c, url, framed(avro_id, &payload)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"id": avro_id, "schemaType": "AVRO",
               "value": {"id": "o-1", "qty": -3, "note": null}})
    );
    // A byte past the datum, or a datum cut inside a field, is not the record.
    let mut longer = payload.clone();
    longer.push(7);
    for bad in [longer, payload[..3].to_vec()] {
        let (status, body) = decode(&c, url, framed(avro_id, &bad)).await;
        assert_eq!(
            (status, body["error_code"].as_u64()),
            (422, Some(422)),
            "{body}"
        );
    }

    // JSON Schema: the payload is the JSON document.
    let schema = json!({"type":"object","properties":{"name":{"type":"string"}}});
    let json_id = register(
        &c,
        url,
        "people-value",
        json!({"schemaType": "JSON", "schema": schema.to_string()}),
    )
    .await;
    let (status, body) = decode(&c, url, framed(json_id, br#"{"name":"ada"}"#)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"id": json_id, "schemaType": "JSON", "value": {"name": "ada"}})
    );

    // Protobuf: message indexes [1] name the second top-level message.
    let proto = "syntax = \"proto3\";\npackage acme;\nmessage Other { int32 x = 1; }\n\
                 message Reading { string sensor = 1; int64 at = 2; repeated int32 v = 3; }\n";
    let proto_id = register(
        &c,
        url,
        "readings-value",
        json!({"schemaType": "PROTOBUF", "schema": proto}),
    )
    .await;
    let mut payload = vec![2, 2]; // one index (zig-zag 1), then 1 (zig-zag 2)
    payload.extend_from_slice(&[0x0a, 2, b's', b'1']); // sensor = "s1"
    payload.extend_from_slice(&[0x10, 0x96, 0x01]); // at = 150
    payload.extend_from_slice(&[0x1a, 2, 4, 5]); // v = [4, 5], packed
    let (status, body) = decode(&c, url, framed(proto_id, &payload)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"id": proto_id, "schemaType": "PROTOBUF", "message": "acme.Reading",
               "value": {"sensor": "s1", "at": "150", "v": [4, 5]}})
    );
    // The single 0 byte Confluent writes for [0]: the first message.
    let (status, body) = decode(&c, url, framed(proto_id, &[0, 0x08, 7])).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"], "acme.Other");
    assert_eq!(body["value"], json!({"x": 7}));

    // Refusals: not the wire format (422), an id no schema has (404 / 40403).
    for record in [
        b"{\"plain\":1}".to_vec(),
        vec![0, 0, 0],
        vec![1, 0, 0, 0, 1, 0],
    ] {
        let (status, body) = decode(&c, url, record.clone()).await;
        assert_eq!(
            (status, body["error_code"].as_u64()),
            (422, Some(422)),
            "{record:?}"
        );
    }
    let (status, body) = decode(&c, url, framed(9999, &[0])).await;
    assert_eq!(
        (status, body["error_code"].as_u64()),
        (404, Some(40403)),
        "{body}"
    );
}

/// An Avro schema with an array of nulls is refused before decoding: a short record
/// could claim billions of items that take no bytes.
#[tokio::test]
async fn an_array_of_items_that_take_no_bytes_is_not_decoded() {
    let (_tmp, s, _) = fresh_server(&[]).await;
    let c = client();
    let url = s.url("");
    let url = url.trim_end_matches('/');
    let schema = json!({"type":"record","name":"Nothing","fields":[
        {"name":"xs","type":{"type":"array","items":"null"}}
    ]});
    let id = register(
        &c,
        url,
        "nothing-value",
        json!({"schema": schema.to_string()}),
    )
    .await;
    let mut payload = Vec::new();
    avro_long(1 << 40, &mut payload);
    avro_long(0, &mut payload);
    let (status, body) = decode(&c, url, framed(id, &payload)).await;
    assert_eq!(
        (status, body["error_code"].as_u64()),
        (422, Some(422)),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("take no bytes"),
        "{body}"
    );
}
