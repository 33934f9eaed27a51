//! The subcommands, one folder each. A command owns its arguments, its
//! outcome and that outcome's exit status ([`crate::exit::Ending`]); what
//! several commands share (the call log, the trace format, processes,
//! signals, output files) lives beside `cmd/`, never inside one of them.

pub mod bench;
pub mod calibrate;
pub mod curated;
pub mod observe;
pub mod predict;
pub mod record;
pub mod recover;
pub mod scenario;
pub mod verify;
