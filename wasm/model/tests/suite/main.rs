//! The model's integration tests, one test binary (`cargo test -p reuseport-model --test suite`).
//!
//! Each file is a module with the tests of one subject, named after what it pins (see ../README.md). One binary
//! rather than one per file: the model builds at opt-level 3 in test builds (the workspace's Cargo.toml says why),
//! and every separate test crate compiled and linked the model's generic code again at that level. The TypeScript
//! export (`ts_export.rs`, feature `ts`) stays a binary of its own: scripts/gen-types.sh runs it alone.

#[path = "../../benches/common/xorshift.rs"]
mod xorshift;

mod bounds;
mod call_log;
mod cbpf;
mod common;
mod ebpf;
mod eras;
mod host_calls;
mod kernel_bind_rules;
mod layout_bounds;
mod lookup;
mod migrate;
mod paste;
mod paste_session;
mod paste_shapes;
mod programs;
mod selection;
mod sim;
mod spread;
mod tuple_lines;
mod vectors;
