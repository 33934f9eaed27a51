//! `trace-v1.schema.json` against the trace types ([`crate::schema_check`]):
//! a field added to a type and not to the schema (or the other way round)
//! fails here.

use serde_json::Value;

/// `CpuPin`'s fields (the type is the model's, without a schema).
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
pub struct CpuPinShape {
    listener: u32,
    cpu: u32,
}

#[test]
fn the_checked_in_trace_schema_has_the_fields_of_the_types() {
    let generated = serde_json::to_value(schemars::schema_for!(super::Trace)).unwrap();
    let checked_in: Value = serde_json::from_str(super::SCHEMA).unwrap();
    crate::schema_check::assert_same(&generated, &checked_in, &[]);
}
