//! Trace files: versioned JSON recording which listener the running kernel
//! chose for each connection or datagram. The schema is checked in at
//! `public/traces/schema/trace-v1.schema.json`; every read validates against
//! it and names the field at fault.

use std::net::IpAddr;
use std::path::Path;

use reuseport_model::reuseport::{CpuPin, Program};
use reuseport_model::{GroupSpec, Keys, Proto, Tuple};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The JSON Schema every trace satisfies.
pub const SCHEMA: &str = include_str!("../../public/traces/schema/trace-v1.schema.json");
/// The `format` field's value.
pub const FORMAT: &str = "reuseport-lab-trace";
/// The version this code writes and reads.
pub const VERSION: u32 = 1;

/// Why a trace could not be read.
#[derive(Debug, Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("cannot read trace {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Not JSON.
    #[error("trace {path} is not JSON: {source} (line {line}, column {column})")]
    Json {
        /// The file.
        path: String,
        /// The cause.
        source: serde_json::Error,
        /// Line of the problem.
        line: usize,
        /// Column of the problem.
        column: usize,
    },
    /// JSON that breaks the schema.
    #[error("trace {path} does not match the trace schema v1: {problems}")]
    Schema {
        /// The file.
        path: String,
        /// Each violation with its JSON pointer, `; `-separated.
        problems: String,
    },
    /// Valid per the schema, but inconsistent (a listener number past the group).
    #[error("trace {path}: {problem}")]
    Inconsistent {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
}

/// The kernel that recorded the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// `uname -r`.
    pub release: String,
    /// The model profile it maps to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// The recording machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineInfo {
    /// Online CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// `host`, or the network namespace the agent made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
}

/// A classic BPF program attached to the group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BpfInfo {
    /// `cpu` or `payload-mod`.
    pub kind: String,
    /// The modulus of `payload-mod`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modulus: Option<u32>,
}

/// The group as it was set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceGroup {
    /// TCP or UDP.
    pub proto: Proto,
    /// Bound address.
    pub bind: IpAddr,
    /// Bound port.
    pub port: u16,
    /// Sockets that joined.
    pub listeners: u32,
    /// IPV6_V6ONLY.
    #[serde(default)]
    pub v6only: bool,
    /// Closed before traffic, in order.
    #[serde(default)]
    pub closed: Vec<u32>,
    /// SO_INCOMING_CPU settings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incoming_cpu: Vec<CpuPin>,
    /// Attached program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf: Option<BpfInfo>,
    /// `net.ipv4.tcp_migrate_req` during the recording.
    #[serde(default)]
    pub tcp_migrate_req: bool,
    /// `socks[0..num_socks)` after setup, per the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slots: Vec<u32>,
}

impl TraceGroup {
    /// The model's description of this group with the given keys, with the
    /// attached program when the trace records one.
    pub fn spec(&self, keys: Keys) -> GroupSpec {
        let program = self
            .bpf
            .as_ref()
            .and_then(|b| match (b.kind.as_str(), b.modulus) {
                ("cpu", _) => Some(Program::Cpu),
                ("payload-mod", Some(modulus)) => Some(Program::PayloadMod { modulus }),
                _ => None,
            });
        GroupSpec {
            program,
            v6only: self.v6only,
            closed: self.closed.clone(),
            incoming_cpu: self.incoming_cpu.clone(),
            tcp_migrate_req: self.tcp_migrate_req,
            ..GroupSpec::new(self.proto, self.listeners, self.bind, self.port, keys)
        }
    }
}

/// Counts over the whole recording.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Connections or datagrams driven.
    pub events: u64,
    /// Events kept in the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<u64>,
    /// Events per listener, all counted.
    pub per_listener: Vec<u64>,
    /// Events nobody received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
}

/// Sampling of events into the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampling {
    /// Every n-th event is kept.
    pub every: u64,
}

/// One connection or datagram and the listener that got it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The event's number in the run, from 0, lost events counted (so it
    /// has gaps when events were lost or sampled out). A UDP datagram
    /// carries it as its payload, a big-endian u32 (modulo 2^32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Client address.
    pub saddr: IpAddr,
    /// Client port.
    pub sport: u16,
    /// Server address.
    pub daddr: IpAddr,
    /// Server port.
    pub dport: u16,
    /// The chosen listener (join order).
    pub listener: u32,
    /// Its slot in `socks[]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// CPU of the client (loopback: receiving CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// Nanoseconds since the recording started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_ns: Option<u64>,
    /// connect()/send() to accept()/receive, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<u64>,
}

impl Event {
    /// The packet as a model tuple.
    pub fn tuple(&self) -> Tuple {
        Tuple {
            saddr: self.saddr,
            sport: self.sport,
            daddr: self.daddr,
            dport: self.dport,
        }
    }
}

/// A whole trace file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// UTC start time, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<String>,
    /// The command that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The kernel.
    pub kernel: KernelInfo,
    /// The machine.
    #[serde(default)]
    pub machine: MachineInfo,
    /// The group.
    pub group: TraceGroup,
    /// How traffic was driven.
    pub options: serde_json::Value,
    /// Counts.
    pub counts: Counts,
    /// Sampling, when not every event is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
    /// The events.
    pub events: Vec<Event>,
}

fn schema_problems(value: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(SCHEMA).expect("the checked-in schema is JSON");
    let validator =
        jsonschema::validator_for(&schema).expect("the checked-in schema is a valid JSON Schema");
    validator
        .iter_errors(value)
        .take(10)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!(
                "at {}: {e}",
                if at.is_empty() { "/".to_string() } else { at }
            )
        })
        .collect()
}

impl Trace {
    /// Parses and validates trace text; `path` names it in messages.
    pub fn parse(text: &str, path: &str) -> Result<Trace, TraceError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| TraceError::Json {
                path: path.into(),
                line: e.line(),
                column: e.column(),
                source: e,
            })?;
        let problems = schema_problems(&value);
        if !problems.is_empty() {
            return Err(TraceError::Schema {
                path: path.into(),
                problems: problems.join("; "),
            });
        }
        let trace: Trace = serde_json::from_value(value).map_err(|e| TraceError::Schema {
            path: path.into(),
            problems: e.to_string(),
        })?;
        trace.check(path)?;
        Ok(trace)
    }

    /// Reads and validates a trace file.
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
            path: p.clone(),
            source,
        })?;
        Trace::parse(&text, &p)
    }

    /// Consistency the schema cannot express.
    fn check(&self, path: &str) -> Result<(), TraceError> {
        let n = self.group.listeners;
        let bad = |problem: String| {
            Err(TraceError::Inconsistent {
                path: path.into(),
                problem,
            })
        };
        if let Some(l) = self.group.closed.iter().find(|&&l| l >= n) {
            return bad(format!(
                "group.closed names listener {l}, but the group has {n} listener(s), numbered from 0"
            ));
        }
        if let Some((i, e)) = self
            .events
            .iter()
            .enumerate()
            .find(|(_, e)| e.listener >= n)
        {
            return bad(format!(
                "events[{i}].listener is {}, but the group has {n} listener(s), numbered from 0",
                e.listener
            ));
        }
        if self.counts.per_listener.len() != n as usize {
            return bad(format!(
                "counts.perListener has {} entries for {n} listeners",
                self.counts.per_listener.len()
            ));
        }
        Ok(())
    }

    /// Serializes with the schema's field names.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a trace always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        Trace {
            format: FORMAT.into(),
            version: VERSION,
            recorded: Some("2026-11-21T09:00:00Z".into()),
            command: Some("reuseport-agent record --proto tcp --listeners 2".into()),
            kernel: KernelInfo {
                release: "6.18.44".into(),
                profile: Some("6.18".into()),
            },
            machine: MachineInfo {
                cpus: Some(2),
                netns: Some("host".into()),
            },
            group: TraceGroup {
                proto: Proto::Tcp,
                bind: "127.0.0.1".parse().unwrap(),
                port: 40000,
                listeners: 2,
                v6only: false,
                closed: vec![],
                incoming_cpu: vec![],
                bpf: None,
                tcp_migrate_req: false,
                slots: vec![0, 1],
            },
            options: serde_json::json!({"count": 1}),
            counts: Counts {
                events: 1,
                recorded: Some(1),
                per_listener: vec![0, 1],
                lost: None,
            },
            sampling: None,
            events: vec![Event {
                seq: Some(0),
                saddr: "127.0.0.9".parse().unwrap(),
                sport: 50000,
                daddr: "127.0.0.1".parse().unwrap(),
                dport: 40000,
                listener: 1,
                slot: Some(1),
                cpu: Some(0),
                t_ns: Some(10),
                latency_ns: Some(5),
            }],
        }
    }

    #[test]
    fn a_written_trace_reads_back_identically() {
        let t = sample();
        assert_eq!(Trace::parse(&t.to_json(), "mem").unwrap(), t);
    }

    #[test]
    fn schema_violations_name_the_field() {
        let mut v: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
        v["events"][0]["sport"] = serde_json::json!(70000);
        let e = Trace::parse(&v.to_string(), "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/events/0/sport"), "{e}");
        v["events"][0]["sport"] = serde_json::json!(1);
        v["version"] = serde_json::json!(2);
        let e = Trace::parse(&v.to_string(), "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/version"), "{e}");
    }

    #[test]
    fn listener_numbers_past_the_group_are_refused() {
        let mut t = sample();
        t.events[0].listener = 2;
        let e = Trace::parse(&t.to_json(), "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("events[0].listener is 2"), "{e}");
    }

    #[test]
    fn bad_json_names_line_and_column() {
        let e = Trace::parse("{\n  \"format\": ,\n}", "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }
}
