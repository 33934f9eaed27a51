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
pub const SCHEMA: &str = include_str!("../../../public/traces/schema/trace-v1.schema.json");
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct KernelInfo {
    /// `uname -r`.
    pub release: String,
    /// The model profile it maps to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// The recording machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TraceGroup {
    /// TCP or UDP.
    #[cfg_attr(test, schemars(with = "String"))]
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
    /// Closed before traffic, in order (required, as the schema says).
    pub closed: Vec<u32>,
    /// SO_INCOMING_CPU settings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(test, schemars(with = "Vec<schema_check::CpuPinShape>"))]
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Sampling {
    /// Every n-th event is kept.
    pub every: u64,
}

/// One connection or datagram and the listener that got it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
    /// The hash the kernel computed for the packet, as it passed it to
    /// `reuseport_select_sock` (`observe --trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<u32>,
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
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

/// The schema's validator: the whole trace, or (`events_item`) one event.
fn validator(events_item: bool) -> &'static jsonschema::Validator {
    use std::sync::OnceLock;
    static WHOLE: OnceLock<jsonschema::Validator> = OnceLock::new();
    static EVENT: OnceLock<jsonschema::Validator> = OnceLock::new();
    let build = |item: bool| {
        let schema: serde_json::Value =
            serde_json::from_str(SCHEMA).expect("the checked-in schema is JSON");
        let schema = if item {
            schema["properties"]["events"]["items"].clone()
        } else {
            schema
        };
        jsonschema::validator_for(&schema).expect("the checked-in schema is a valid JSON Schema")
    };
    if events_item {
        EVENT.get_or_init(|| build(true))
    } else {
        WHOLE.get_or_init(|| build(false))
    }
}

/// The schema's complaints about `value`, each with its JSON pointer
/// (under `prefix`), at most 10.
fn schema_problems(
    v: &jsonschema::Validator,
    value: &serde_json::Value,
    prefix: &str,
) -> Vec<String> {
    v.iter_errors(value)
        .take(10)
        .map(|e| {
            let at = format!("{prefix}{}", e.instance_path());
            format!(
                "at {}: {}",
                if at.is_empty() { "/".to_string() } else { at },
                tamed(&e.to_string())
            )
        })
        .collect()
}

/// The most characters a trace's or a scenario trace's `command` holds
/// (the schemas' `maxLength`).
pub const MAX_COMMAND: usize = 65536;

/// A command line as a trace records it: whole, or, past [`MAX_COMMAND`]
/// characters, its start and `…`, so the trace still meets its schema.
pub fn bounded_command(command: String) -> String {
    if command.chars().count() <= MAX_COMMAND {
        return command;
    }
    command.chars().take(MAX_COMMAND - 1).chain(['…']).collect()
}

/// A schema message fit to print: it quotes the offending value, which may
/// be huge or hold invisible characters, so a long one keeps its first 200
/// and last 80 characters, and invisible ones are written as `\u{…}`.
pub fn tamed(message: &str) -> String {
    const HEAD: usize = 200;
    const TAIL: usize = 80;
    let n = message.chars().count();
    let kept: Box<dyn Iterator<Item = char>> = if n > HEAD + TAIL + 20 {
        Box::new(
            message
                .chars()
                .take(HEAD)
                .chain(['…'])
                .chain(message.chars().skip(n - TAIL)),
        )
    } else {
        Box::new(message.chars())
    };
    let mut one = [0u8; 4];
    kept.map(|c| {
        if c == '…' {
            c.to_string()
        } else {
            reuseport_model::paste::shown(c.encode_utf8(&mut one))
        }
    })
    .collect()
}

/// Addresses are strings in the schema: each is parsed here, so a bad one
/// is named by its JSON pointer.
fn address_problems(value: &serde_json::Value, fields: &[&str], prefix: &str) -> Vec<String> {
    fields
        .iter()
        .filter_map(|f| {
            let text = value.get(f)?.as_str()?;
            text.parse::<IpAddr>().is_err().then(|| {
                format!(
                    "at {prefix}/{f}: {} is not an IP address",
                    reuseport_model::paste::shown(text)
                )
            })
        })
        .collect()
}

/// Reads a trace's top-level object, handing each event to a callback as
/// it is parsed (only one event is held at a time) and keeping the rest.
struct Streaming<'a>(Events<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for Streaming<'_> {
    type Value = serde_json::Map<String, serde_json::Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Streaming<'_> {
    type Value = serde_json::Map<String, serde_json::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a trace object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        mut self,
        mut map: A,
    ) -> Result<Self::Value, A::Error> {
        let mut head = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "events" && head.contains_key("events") {
                *self.0.problem = Some(TraceError::Schema {
                    path: self.0.path.into(),
                    problems: "at /events: the key appears twice".into(),
                });
                return Err(serde::de::Error::custom("events twice"));
            }
            if key == "events" {
                map.next_value_seed(self.0.reborrow())?;
                head.insert(key, serde_json::Value::Array(Vec::new()));
            } else {
                let v: serde_json::Value = map.next_value()?;
                head.insert(key, v);
            }
        }
        Ok(head)
    }
}

/// The `events` array, one element at a time.
struct Events<'a> {
    path: &'a str,
    on_event: &'a mut dyn FnMut(usize, Event),
    /// The first problem found, kept whole (serde's error carries only text).
    problem: &'a mut Option<TraceError>,
    /// The largest listener named by an event, and where.
    max_listener: &'a mut Option<(u32, usize)>,
}

impl Events<'_> {
    fn reborrow(&mut self) -> Events<'_> {
        Events {
            path: self.path,
            on_event: &mut *self.on_event,
            problem: &mut *self.problem,
            max_listener: &mut *self.max_listener,
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Events<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        // Not an array: the head's schema check names it.
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Events<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of events")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while let Some(v) = seq.next_element::<serde_json::Value>()? {
            let at = format!("/events/{i}");
            let mut problems = schema_problems(validator(true), &v, &at);
            if problems.is_empty() {
                problems = address_problems(&v, &["saddr", "daddr"], &at);
            }
            let event = if problems.is_empty() {
                serde_json::from_value::<Event>(v).map_err(|e| vec![format!("at {at}: {e}")])
            } else {
                Err(problems)
            };
            match event {
                Ok(e) => {
                    if self.max_listener.is_none_or(|(l, _)| e.listener > l) {
                        *self.max_listener = Some((e.listener, i));
                    }
                    (self.on_event)(i, e);
                }
                Err(problems) => {
                    *self.problem = Some(TraceError::Schema {
                        path: self.path.into(),
                        problems: problems.join("; "),
                    });
                    return Err(serde::de::Error::custom("an event breaks the schema"));
                }
            }
            i += 1;
        }
        Ok(())
    }

    // Anything else: the head's schema check says what `events` should be.
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        self.not_an_array()
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.not_an_array()
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.not_an_array()
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.not_an_array()
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.not_an_array()
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.not_an_array()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.not_an_array()
    }
}

impl Events<'_> {
    fn not_an_array<E: serde::de::Error>(self) -> Result<(), E> {
        *self.problem = Some(TraceError::Schema {
            path: self.path.into(),
            problems: "at /events: not an array of events".into(),
        });
        Err(E::custom("events is not an array"))
    }
}

impl Trace {
    /// Parses and validates trace text; `path` names it in messages.
    pub fn parse(text: &str, path: &str) -> Result<Trace, TraceError> {
        let mut events = Vec::new();
        let mut trace = Trace::stream(text.as_bytes(), path, &mut |_, e| events.push(e))?;
        trace.events = events;
        Ok(trace)
    }

    /// Reads and validates a trace file.
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let mut events = Vec::new();
        let mut trace = Trace::read_streaming(path, &mut |_, e| events.push(e))?;
        trace.events = events;
        Ok(trace)
    }

    /// Reads and validates a trace file, handing each event (with its
    /// index) to `on_event` as it is read instead of keeping them: the
    /// trace returned has no events, and memory does not grow with them.
    pub fn read_streaming(
        path: &Path,
        on_event: &mut dyn FnMut(usize, Event),
    ) -> Result<Trace, TraceError> {
        let p = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| TraceError::Io {
            path: p.clone(),
            source,
        })?;
        Trace::stream(
            std::io::BufReader::with_capacity(1 << 16, file),
            &p,
            on_event,
        )
    }

    /// Validates a trace from `input` as it is read (see
    /// [`Trace::read_streaming`]). The events are checked one by one
    /// against the schema's item rule; the rest against the whole schema
    /// with the events taken out.
    pub fn stream(
        input: impl std::io::Read,
        path: &str,
        on_event: &mut dyn FnMut(usize, Event),
    ) -> Result<Trace, TraceError> {
        use serde::de::DeserializeSeed;
        let mut problem = None;
        let mut max_listener = None;
        let mut de = serde_json::Deserializer::from_reader(input);
        let json = |e: serde_json::Error| TraceError::Json {
            path: path.into(),
            line: e.line(),
            column: e.column(),
            source: e,
        };
        let parsed = Streaming(Events {
            path,
            on_event,
            problem: &mut problem,
            max_listener: &mut max_listener,
        })
        .deserialize(&mut de)
        .and_then(|head| de.end().map(|()| head));
        let head = match (parsed, problem) {
            (_, Some(p)) => return Err(p),
            (Err(e), None) if e.is_data() => {
                // Not an object at all: the schema says what is expected.
                return Err(TraceError::Schema {
                    path: path.into(),
                    problems: "at /: not a trace object".into(),
                });
            }
            (Err(e), None) => return Err(json(e)),
            (Ok(head), None) => serde_json::Value::Object(head),
        };
        let mut problems = schema_problems(validator(false), &head, "");
        if problems.is_empty() {
            if let Some(g) = head.get("group") {
                problems = address_problems(g, &["bind"], "/group");
            }
        }
        if !problems.is_empty() {
            return Err(TraceError::Schema {
                path: path.into(),
                problems: problems.join("; "),
            });
        }
        let trace: Trace = serde_json::from_value(head).map_err(|e| TraceError::Schema {
            path: path.into(),
            problems: e.to_string(),
        })?;
        trace.check(path, max_listener)?;
        Ok(trace)
    }

    /// Consistency the schema cannot express; `max_listener` is the
    /// largest listener an event names and that event's index.
    fn check(&self, path: &str, max_listener: Option<(u32, usize)>) -> Result<(), TraceError> {
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
        if let Some((l, i)) = max_listener.filter(|&(l, _)| l >= n) {
            return bad(format!(
                "events[{i}].listener is {l}, but the group has {n} listener(s), numbered from 0"
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

    /// Why: a trace's strings had no bound, so a 1 MB command made the trace
    /// viewer's page unresponsive for a minute. The schema bounds every
    /// string; a longer one is refused naming it, and the agent cuts its
    /// own command line to the bound.
    #[test]
    fn a_command_past_its_bound_is_refused_and_the_agent_writes_a_cut_one() {
        let mut t = sample();
        t.command = Some("x ".repeat(MAX_COMMAND));
        let e = Trace::parse(&t.to_json(), "t.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("at /command") && e.contains("65536"),
            "{}",
            &e[..e.len().min(400)]
        );
        t.command = t.command.map(bounded_command);
        assert_eq!(t.command.as_ref().unwrap().chars().count(), MAX_COMMAND);
        Trace::parse(&t.to_json(), "t.json").unwrap();
    }

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
                hash: None,
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
    fn a_huge_or_invisible_value_is_cut_and_escaped_in_a_schema_message() {
        let mut v: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
        v["events"][0]["sport"] = format!("{}\u{202e}", "x".repeat(100_000)).into();
        let e = Trace::parse(&v.to_string(), "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/events/0/sport"), "{e}");
        assert!(e.len() < 800, "{} bytes", e.len());
        assert!(e.contains("\\u{202e}") && !e.contains('\u{202e}'), "{e}");
    }

    #[test]
    fn bad_json_names_line_and_column() {
        let e = Trace::parse("{\n  \"format\": ,\n}", "t.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }
}

#[cfg(test)]
mod schema_check;
