//! Checks that a checked-in JSON Schema describes the serde types it is
//! for: a schema generated from the types (schemars, in tests only) and the
//! checked-in one must describe the same objects with the same fields and
//! the same required fields, so neither can drift from the other.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

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
/// required ones (`$ref`s followed, `oneOf`/`anyOf`/`allOf` branches merged).
fn shape(v: &Value, root: &Value, path: &str, out: &mut Shape) {
    let Value::Object(o) = v else { return };
    if let Some(Value::String(r)) = o.get("$ref") {
        let target = r.strip_prefix('#').and_then(|p| root.pointer(p));
        shape(target.expect("a local $ref"), root, path, out);
    }
    if let Some(Value::Object(props)) = o.get("properties") {
        let e = out.entry(path.to_string()).or_default();
        e.0.extend(props.keys().cloned());
        e.1.extend(names(o.get("required")));
        for (k, p) in props {
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

/// Fails unless `checked_in` describes the objects of `generated` with the
/// same fields and required fields. Below the paths in `opaque` (fields the
/// types keep as JSON values, described only by the checked-in schema) the
/// checked-in schema is not compared.
pub fn assert_same(generated: &Value, checked_in: &Value, opaque: &[&str]) {
    let (g, c) = (of(generated), of(checked_in));
    let inside = |p: &str| opaque.iter().any(|o| p.starts_with(o));
    let c_paths: Vec<&String> = c.keys().filter(|p| !inside(p)).collect();
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        c_paths,
        "the objects differ (types, then schema)"
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
