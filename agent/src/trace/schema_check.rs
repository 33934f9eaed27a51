//! The checked-in schema against the serde types: generated from the types
//! (schemars), both must describe the same objects with the same fields and
//! the same required ones, so a field added to a type and not to
//! `trace-v1.schema.json` (or the other way round) fails here.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// `CpuPin`'s fields (the type is the model's, without a schema).
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
pub struct CpuPinShape {
    listener: u32,
    cpu: u32,
}

type Shape = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn names(v: Option<&Value>) -> BTreeSet<String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        Some(Value::Object(o)) => o.keys().cloned().collect(),
        _ => BTreeSet::new(),
    }
}

/// Every object the schema describes, by path: its properties and the
/// required ones (`$ref`s followed, `oneOf`/`anyOf` branches merged).
fn shape(v: &Value, root: &Value, path: &str, out: &mut Shape) {
    let Value::Object(o) = v else { return };
    if let Some(Value::String(r)) = o.get("$ref") {
        let target = r.strip_prefix('#').and_then(|p| root.pointer(p));
        shape(target.expect("a local $ref"), root, path, out);
    }
    if o.contains_key("properties") {
        let e = out.entry(path.to_string()).or_default();
        e.0.extend(names(o.get("properties")));
        e.1.extend(names(o.get("required")));
        for (k, p) in o["properties"].as_object().unwrap() {
            shape(p, root, &format!("{path}.{k}"), out);
        }
    }
    if let Some(items) = o.get("items") {
        shape(items, root, &format!("{path}[]"), out);
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        for b in o.get(key).and_then(Value::as_array).into_iter().flatten() {
            shape(b, root, path, out);
        }
    }
}

fn of(schema: &Value) -> Shape {
    let mut out = Shape::new();
    shape(schema, schema, "", &mut out);
    out
}

#[test]
fn the_checked_in_trace_schema_has_the_fields_of_the_types() {
    let generated = serde_json::to_value(schemars::schema_for!(super::Trace)).unwrap();
    let checked_in: Value = serde_json::from_str(super::SCHEMA).unwrap();
    let (g, c) = (of(&generated), of(&checked_in));
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        c.keys().collect::<Vec<_>>(),
        "the objects differ"
    );
    for (path, (props, required)) in &g {
        let (cprops, crequired) = &c[path];
        assert_eq!(props, cprops, "properties of {path:?} (types, then schema)");
        assert_eq!(
            required, crequired,
            "required fields of {path:?} (types, then schema)"
        );
    }
}
