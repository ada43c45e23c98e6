//! JSON Schema: validity of a schema document and a stated subset of compatibility.
//!
//! **Validity**: the text is JSON, an object or a boolean; the keywords this module
//! knows have values of the right JSON type (`type` a type name or an array of them;
//! `properties`, `patternProperties`, `definitions`, `$defs` objects of schemas;
//! `required` an array of strings; `enum` an array; `items` a schema or an array of
//! schemas; `additionalProperties`, `not`, `if`, `then`, `else`, `contains` schemas;
//! `allOf`, `anyOf`, `oneOf` non-empty arrays of schemas), checked at every depth.
//!
//! **Compatibility** ("can the reader schema accept every document the writer schema
//! accepts"), checked on these keywords, recursively through `properties` and `items`:
//! - `type`: the reader's types must include the writer's (`number` includes `integer`);
//! - `required`: the reader may not require a property the writer did not;
//! - `properties`: a property the reader adds must not be required; a property the
//!   writer had and the reader drops is refused when the reader has
//!   `additionalProperties: false`;
//! - `additionalProperties`: a reader that closes the content model (`false`) when the
//!   writer did not is refused;
//! - `enum`: the reader's values must include the writer's; a reader adding an `enum`
//!   is refused.
//!
//! Every other validation keyword (`allOf`/`anyOf`/`oneOf`, `$ref`, `const`, bounds,
//! patterns, formats, …) must be equal in both schemas, else the change is reported
//! as incompatible (unanalysed). Annotations (`title`, `description`, `default`,
//! `examples`, `$comment`, `$id`, `$schema`) are ignored.

use serde_json::{Map, Value};

use crate::error::RegistryError;

/// Checks that `text` is a JSON Schema document; returns it parsed.
pub(crate) fn parse(text: &str) -> Result<Value, RegistryError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| RegistryError::InvalidSchema(format!("not JSON: {e}")))?;
    check_schema(&value, "#").map_err(RegistryError::InvalidSchema)?;
    Ok(value)
}

const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "string", "integer",
];

const ANNOTATIONS: [&str; 7] = [
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "$id",
    "$schema",
];

const ANALYSED: [&str; 5] = [
    "type",
    "required",
    "properties",
    "additionalProperties",
    "enum",
];

fn check_schema(v: &Value, at: &str) -> Result<(), String> {
    let obj = match v {
        Value::Bool(_) => return Ok(()),
        Value::Object(o) => o,
        _ => return Err(format!("{at}: a schema must be an object or a boolean")),
    };
    for (k, val) in obj {
        let here = format!("{at}/{k}");
        match k.as_str() {
            "type" => match val {
                Value::String(t) => check_type(t, &here)?,
                Value::Array(ts) if !ts.is_empty() => {
                    for t in ts {
                        match t {
                            Value::String(t) => check_type(t, &here)?,
                            _ => return Err(format!("{here}: type names must be strings")),
                        }
                    }
                }
                _ => return Err(format!("{here}: must be a type name or an array of them")),
            },
            "properties" | "patternProperties" | "definitions" | "$defs" => {
                let Value::Object(m) = val else {
                    return Err(format!("{here}: must be an object of schemas"));
                };
                for (name, s) in m {
                    check_schema(s, &format!("{here}/{name}"))?;
                }
            }
            "required" => {
                let ok = matches!(val, Value::Array(a) if a.iter().all(Value::is_string));
                if !ok {
                    return Err(format!("{here}: must be an array of strings"));
                }
            }
            "enum" if !val.is_array() => return Err(format!("{here}: must be an array")),
            "items" => match val {
                Value::Array(a) => {
                    for (i, s) in a.iter().enumerate() {
                        check_schema(s, &format!("{here}/{i}"))?;
                    }
                }
                s => check_schema(s, &here)?,
            },
            "additionalProperties"
            | "additionalItems"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames" => check_schema(val, &here)?,
            "allOf" | "anyOf" | "oneOf" => match val {
                Value::Array(a) if !a.is_empty() => {
                    for (i, s) in a.iter().enumerate() {
                        check_schema(s, &format!("{here}/{i}"))?;
                    }
                }
                _ => return Err(format!("{here}: must be a non-empty array of schemas")),
            },
            "$ref" if !val.is_string() => return Err(format!("{here}: must be a string")),
            _ => {}
        }
    }
    Ok(())
}

fn check_type(t: &str, at: &str) -> Result<(), String> {
    if TYPES.contains(&t) {
        Ok(())
    } else {
        Err(format!("{at}: unknown type '{t}'"))
    }
}

/// Why `reader` may refuse a document `writer` accepts (empty: it accepts them all, as
/// far as the keywords above tell).
pub(crate) fn incompatibilities(writer: &Value, reader: &Value) -> Vec<String> {
    let mut out = Vec::new();
    compare(writer, reader, "#", &mut out);
    out
}

fn compare(writer: &Value, reader: &Value, at: &str, out: &mut Vec<String>) {
    let empty = Map::new();
    let (w, r) = match (writer, reader) {
        (_, Value::Bool(true)) => return,
        (Value::Bool(false), _) => return,
        (Value::Bool(true), Value::Object(r)) => (&empty, r),
        (Value::Object(_), Value::Bool(false)) | (Value::Bool(true), Value::Bool(false)) => {
            out.push(format!("{at}: the reader accepts nothing"));
            return;
        }
        (Value::Object(w), Value::Object(r)) => (w, r),
        _ => return,
    };
    if let Some(rt) = types(r) {
        match types(w) {
            None => out.push(format!("{at}: the reader restricts the type")),
            Some(wt) => {
                for t in wt {
                    let covered = rt.contains(&t) || (t == "integer" && rt.contains(&"number"));
                    if !covered {
                        out.push(format!("{at}: type '{t}' is no longer accepted"));
                    }
                }
            }
        }
    }
    let required = |m: &Map<String, Value>| -> Vec<String> {
        m.get("required")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let w_req = required(w);
    for name in required(r) {
        if !w_req.contains(&name) {
            out.push(format!("{at}: property '{name}' is newly required"));
        }
    }
    let closed =
        |m: &Map<String, Value>| m.get("additionalProperties") == Some(&Value::Bool(false));
    if closed(r) && !closed(w) {
        out.push(format!(
            "{at}: the reader no longer accepts additional properties"
        ));
    }
    let props = |m: &Map<String, Value>| m.get("properties").and_then(Value::as_object).cloned();
    let (wp, rp) = (props(w).unwrap_or_default(), props(r).unwrap_or_default());
    for (name, ws) in &wp {
        match rp.get(name) {
            Some(rs) => compare(ws, rs, &format!("{at}/properties/{name}"), out),
            None if closed(r) => out.push(format!("{at}: property '{name}' was removed")),
            None => {}
        }
    }
    match (w.get("enum"), r.get("enum")) {
        (Some(Value::Array(we)), Some(Value::Array(re))) => {
            for v in we {
                if !re.contains(v) {
                    out.push(format!("{at}: enum value {v} was removed"));
                }
            }
        }
        (None, Some(_)) => out.push(format!("{at}: the reader adds an enum")),
        _ => {}
    }
    match (w.get("items"), r.get("items")) {
        (
            Some(wi @ (Value::Object(_) | Value::Bool(_))),
            Some(ri @ (Value::Object(_) | Value::Bool(_))),
        ) => {
            compare(wi, ri, &format!("{at}/items"), out);
        }
        (wi, ri) if wi != ri => out.push(format!("{at}: 'items' changed (unanalysed)")),
        _ => {}
    }
    let mut keys: Vec<&String> = w.keys().chain(r.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let k = k.as_str();
        if ANALYSED.contains(&k) || ANNOTATIONS.contains(&k) || k == "items" {
            continue;
        }
        if w.get(k) != r.get(k) {
            out.push(format!("{at}: '{k}' changed (unanalysed)"));
        }
    }
}

fn types(m: &Map<String, Value>) -> Option<Vec<&str>> {
    match m.get("type")? {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(a) => Some(a.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> Value {
        parse(s).unwrap()
    }

    #[test]
    fn validity() {
        assert!(parse(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#).is_ok());
        assert!(parse("true").is_ok());
        for bad in [
            "{",
            "3",
            r#"{"type":"strnig"}"#,
            r#"{"properties":{"a":3}}"#,
            r#"{"required":"a"}"#,
            r#"{"allOf":[]}"#,
            r#"{"items":{"properties":{"x":{"type":7}}}}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn compatibility_subset() {
        let v1 = j(r#"{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}"#);
        let optional_b = j(
            r#"{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"string"}},"required":["a"]}"#,
        );
        let required_b = j(
            r#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"]}"#,
        );
        let narrowed =
            j(r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}"#);
        assert!(incompatibilities(&v1, &optional_b).is_empty());
        assert!(!incompatibilities(&v1, &required_b).is_empty());
        assert!(!incompatibilities(&v1, &narrowed).is_empty());
        // number is not accepted by an integer reader
        assert!(!incompatibilities(&optional_b, &v1).is_empty());
        let bounded = j(
            r#"{"type":"object","properties":{"a":{"type":"integer","maximum":3}},"required":["a"]}"#,
        );
        assert!(!incompatibilities(&v1, &bounded).is_empty());
        let titled = j(
            r#"{"type":"object","title":"T","properties":{"a":{"type":"integer"}},"required":["a"]}"#,
        );
        assert!(incompatibilities(&v1, &titled).is_empty());
    }
}
