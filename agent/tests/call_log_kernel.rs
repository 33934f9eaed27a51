//! The call logs of `tests/fixtures/calllogs/` replayed on the running
//! kernel, each in a private network namespace: every call's answer and
//! the sockets that receive must be those recorded in the fixture's
//! `kernel` section (recorded on this kernel with this test; the model's
//! test `wasm/model/tests/call_log.rs` checks the model against the same
//! section). Needs root for the namespace; otherwise `SKIPPED` ([`common`]).

use std::net::IpAddr;

use reuseport_model::lookup::{Call, CallLog, Family};
use serde_json::{json, Value};

mod common;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/calllogs");

/// What the kernel did with one log: each answer's name, and per probed
/// destination the fds that received.
#[cfg(target_os = "linux")]
fn observe(log: &CallLog) -> Value {
    use reuseport_agent::calllog::{self, errno_name};
    let log = log.clone();
    std::thread::spawn(move || {
        assert!(
            calllog::private_netns(),
            "a private network namespace could not be made"
        );
        let run = calllog::replay(&log);
        let answers: Vec<String> = run.answers.iter().map(|a| errno_name(*a)).collect();
        let mut receivers = serde_json::Map::new();
        // A log that mixes protocols is about its answers only.
        let Some(proto) = calllog::proto_of(&log) else {
            return json!({ "answers": answers, "receivers": receivers });
        };
        let inet6 = log.calls.iter().any(|c| {
            matches!(
                c,
                Call::Socket {
                    family: Family::Inet6,
                    ..
                }
            )
        });
        let mut dests: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap()];
        if inet6 {
            dests.push("::1".parse().unwrap());
        }
        for d in dests {
            let got = run.receivers_of(proto, d, 8080, 24);
            receivers.insert(d.to_string(), json!(got));
        }
        json!({ "answers": answers, "receivers": receivers })
    })
    .join()
    .expect("the replay thread panicked")
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "replays socket calls on Linux")]
fn each_fixture_call_log_gets_the_recorded_answers_from_this_kernel() {
    if !common::is_root() {
        common::skip(
            "call_log_kernel",
            "needs root for a private network namespace",
        );
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let release = reuseport_agent::kernel::running_release().unwrap();
        let series: String = release.split('.').take(2).collect::<Vec<_>>().join(".");
        let mut names: Vec<_> = std::fs::read_dir(DIR)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        names.sort();
        assert!(names.len() >= 4, "the fixtures are missing");
        let mut wrong = Vec::new();
        for path in names {
            let f: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let log: CallLog = serde_json::from_value(f["log"].clone()).unwrap();
            let seen = observe(&log);
            let mut recorded = f["kernel"].clone();
            if recorded.is_null() {
                wrong.push(format!(
                    "{}: not recorded; this kernel ({series}): {seen}",
                    path.display()
                ));
                continue;
            }
            let on = recorded["release"].as_str().unwrap_or("").to_string();
            if on != series {
                common::skip_fact(
                    "call_log_kernel",
                    &format!(
                        "{} was recorded on {on}, this kernel is {release}",
                        path.display()
                    ),
                );
                continue;
            }
            recorded.as_object_mut().unwrap().remove("release");
            if seen != recorded {
                wrong.push(format!(
                    "{}: recorded {recorded}\n  this kernel: {seen}",
                    path.display()
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
