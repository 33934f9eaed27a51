//! Writes the TypeScript declarations of the model's record types, so the
//! site's types come from the Rust types and are never kept by hand twice.
//! Run by scripts/gen-types.sh: `cargo test -p reuseport-model --features ts --test ts_export`
//! with `TS_EXPORT_DIR` set; without it the test checks that every type exports.
#![cfg(feature = "ts")]

use reuseport_model::explain::Explain;
use reuseport_model::group::AddEffect;
use reuseport_model::lookup::{
    rules::LookupRules, CallLog, CallResult, Layout, LookupExplain, Packet,
};
use reuseport_model::profile::Profile;
use reuseport_model::reuseport::{Change, Choice, GroupSpec, Member};
use ts_rs::{Config, TS};

#[test]
fn export_typescript_declarations() {
    let dir = std::env::var("TS_EXPORT_DIR").ok();
    let cfg = Config::new().with_large_int("number");
    let cfg = match &dir {
        Some(d) => cfg.with_out_dir(d),
        None => cfg.with_out_dir(std::env::temp_dir().join("reuseport-ts-check")),
    };
    Explain::export_all(&cfg).unwrap();
    GroupSpec::export_all(&cfg).unwrap();
    Profile::export_all(&cfg).unwrap();
    Change::export_all(&cfg).unwrap();
    Choice::export_all(&cfg).unwrap();
    Member::export_all(&cfg).unwrap();
    AddEffect::export_all(&cfg).unwrap();
    Layout::export_all(&cfg).unwrap();
    CallLog::export_all(&cfg).unwrap();
    Packet::export_all(&cfg).unwrap();
    LookupExplain::export_all(&cfg).unwrap();
    CallResult::export_all(&cfg).unwrap();
    LookupRules::export_all(&cfg).unwrap();
    reuseport_model::reuseport::Migration::export_all(&cfg).unwrap();
    reuseport_model::reuseport::ebpf::EbpfObject::export_all(&cfg).unwrap();
    reuseport_model::reuseport::ebpf::MapFill::export_all(&cfg).unwrap();
    reuseport_model::reuseport::ebpf::MapRefusal::export_all(&cfg).unwrap();
    reuseport_model::reuseport::ebpf::ElfError::export_all(&cfg).unwrap();
    reuseport_model::reuseport::ebpf::fill::Holds::export_all(&cfg).unwrap();
    reuseport_model::paste::Detected::export_all(&cfg).unwrap();
    reuseport_model::diagnose::DiagnosisVerdict::export_all(&cfg).unwrap();
    reuseport_model::diagnose::Diagnosis::export_all(&cfg).unwrap();
    reuseport_model::diagnose::Snapshot::export_all(&cfg).unwrap();
    reuseport_model::diagnose::counts::CountsDiagnosis::export_all(&cfg).unwrap();
    reuseport_model::paste::Line::export_all(&cfg).unwrap();
    reuseport_model::paste::LineError::export_all(&cfg).unwrap();
    reuseport_model::paste::ParsedLine::export_all(&cfg).unwrap();
    reuseport_model::explain::LineAnswer::export_all(&cfg).unwrap();
    reuseport_model::paste::Decision::export_all(&cfg).unwrap();
    reuseport_model::paste::Undecided::export_all(&cfg).unwrap();
    reuseport_model::paste::Skip::export_all(&cfg).unwrap();
    reuseport_model::paste::LineNote::export_all(&cfg).unwrap();
    reuseport_model::paste::counts::Counted::export_all(&cfg).unwrap();
    reuseport_model::spread::Spread::export_all(&cfg).unwrap();
    reuseport_model::spread::Comparison::export_all(&cfg).unwrap();
    reuseport_model::spread::ListenerRow::export_all(&cfg).unwrap();
    reuseport_model::sim::Scenario::export_all(&cfg).unwrap();
    reuseport_model::sim::SimReport::export_all(&cfg).unwrap();
    reuseport_model::sim::curated::CuratedView::export_all(&cfg).unwrap();
    reuseport_model::sim::matcher::Observed::export_all(&cfg).unwrap();
    reuseport_model::sim::matcher::Match::export_all(&cfg).unwrap();
    reuseport_model::diagnose::paste::ServerInput::export_all(&cfg).unwrap();
    reuseport_model::quic::QuicPacketSpec::export_all(&cfg).unwrap();
    reuseport_model::quic::reload::ReloadReport::export_all(&cfg).unwrap();
    reuseport_model::reuseport::datagram::Datagram::export_all(&cfg).unwrap();
}
