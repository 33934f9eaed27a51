//! Writes the TypeScript declarations of the records the page's workers
//! exchange with this layer (the paste session, the diagnosis plan, the
//! scenario ranking), beside the model's (wasm/model/tests/ts_export.rs), so
//! src/model/paste-protocol.ts and the packages' declarations name them and
//! never restate them. Run by scripts/gen-types.sh:
//! `cargo test -p reuseport-wasm --features ts --lib ts_export` with
//! `TS_EXPORT_DIR` set; without it the test checks that every type exports.

use ts_rs::Config;

#[test]
fn export_typescript_declarations() {
    let dir = std::env::var("TS_EXPORT_DIR").ok();
    let cfg = Config::new().with_large_int("number");
    let cfg = match &dir {
        Some(d) => cfg.with_out_dir(d),
        None => cfg.with_out_dir(std::env::temp_dir().join("reuseport-wasm-ts-check")),
    };
    crate::paste::export_ts(&cfg).unwrap();
    crate::diagnose::export_ts(&cfg).unwrap();
    crate::sim::export_ts(&cfg).unwrap();
}
