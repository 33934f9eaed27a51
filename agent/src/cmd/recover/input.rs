//! `recover`'s input: trace files or `--lines`, checked against the model
//! and turned into the searches to run ([`jobs`]).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};

use reuseport_model::lookup::Host;
use reuseport_model::profile::{Selection, PROFILES};
use reuseport_model::recover::{Obs, Plan, RecoverError};
use reuseport_model::tuple::parse_observed_line;
use reuseport_model::{GroupSpec, Keys, Profile, Proto, Tuple};

use super::{RecoverArgs, RecoverCliError, Skipped};
use crate::cmd::predict::MAX_LINE;
use crate::kernel;
use crate::trace::Trace;

/// One observation before the model sees it.
#[derive(Debug, Clone)]
pub(super) struct Observed {
    /// Which input ([`Input::names`]).
    pub(super) input: u32,
    /// The event's index in its trace, or the line's number.
    pub(super) index: u64,
    /// Index into the input groups.
    pub(super) group: usize,
    pub(super) tuple: Tuple,
    pub(super) listener: u32,
}

/// One group of the input: how to build it for a given profile.
#[derive(Debug, Clone)]
pub(super) struct InputGroup {
    pub(super) at: String,
    pub(super) spec: GroupSpec,
}

/// Everything read: groups, observations, the kernel asked for.
#[derive(Debug)]
pub(super) struct Input {
    pub(super) groups: Vec<InputGroup>,
    pub(super) observed: Vec<Observed>,
    /// The release to model, or `None` for `any`.
    pub(super) kernel: Option<&'static Profile>,
    pub(super) proto: Proto,
    /// Observations read before --max-observations.
    pub(super) read: usize,
    /// Observations dropped as they arrived because an earlier one was the
    /// same packet to the same listener.
    pub(super) duplicates: usize,
    /// The inputs' names (trace files, or the --lines file or `-`).
    pub(super) names: Vec<String>,
    /// Whether the inputs are lines (else traces).
    pub(super) lines: bool,
    pub(super) warnings: Vec<String>,
}

impl Input {
    /// Where an observation came from: `t.json: events[3]`, `line 7` or
    /// `obs.txt: line 7`.
    pub(super) fn at(&self, o: &Observed) -> String {
        let name = &self.names[o.input as usize];
        match (self.lines, name.as_str()) {
            (false, _) => format!("{name}: events[{}]", o.index),
            (true, "-") => format!("line {}", o.index),
            (true, _) => format!("{name}: line {}", o.index),
        }
    }
}

/// Keeps observations as they arrive: the first `max` are used, and a
/// repeat of an earlier one (same group, packet and listener) is counted and
/// dropped, so memory grows with the distinct observations only.
pub(super) struct Keeper {
    pub(super) seen: HashSet<(usize, Tuple, u32)>,
    pub(super) max: u64,
    /// Observations read, all of them.
    pub(super) read: u64,
    pub(super) duplicates: usize,
    pub(super) kept: Vec<Observed>,
}

impl Keeper {
    pub(super) fn new(max: Option<u64>) -> Keeper {
        Keeper {
            seen: HashSet::new(),
            max: max.unwrap_or(u64::MAX),
            read: 0,
            duplicates: 0,
            kept: Vec::new(),
        }
    }

    pub(super) fn add(&mut self, o: Observed) {
        self.read += 1;
        if self.read > self.max {
            return;
        }
        if self.seen.insert((o.group, o.tuple, o.listener)) {
            self.kept.push(o);
        } else {
            self.duplicates += 1;
        }
    }
}

pub(super) fn bad_line(at: String, problem: impl ToString) -> RecoverCliError {
    RecoverCliError::Line {
        at,
        problem: problem.to_string(),
    }
}

pub(super) fn resolve_kernel(
    arg: Option<&str>,
    recorded: Option<&str>,
) -> Result<Option<&'static Profile>, RecoverCliError> {
    match arg {
        Some("any") => Ok(None),
        None | Some("auto") => match recorded {
            Some(release) => Ok(Some(kernel::resolve(release)?)),
            None => Ok(Some(kernel::resolve("auto")?)),
        },
        Some(k) => Ok(Some(kernel::resolve(k)?)),
    }
}

pub(super) fn read_traces(args: &RecoverArgs) -> Result<Input, RecoverCliError> {
    let g = &args.group;
    for (given, name) in [
        (args.proto.is_some(), "--proto"),
        (args.listeners.is_some(), "--listeners"),
        (g.bind.is_some(), "--bind"),
        (!g.closed.is_empty(), "--closed"),
        (!g.shutdown.is_empty(), "--shutdown"),
        (g.tcp_migrate_req, "--tcp-migrate-req"),
        (!g.incoming_cpu.is_empty(), "--incoming-cpu"),
        (!g.connected.is_empty(), "--connected"),
        (g.v6only, "--v6only"),
    ] {
        if given {
            return Err(RecoverCliError::GroupWithTraces(name));
        }
    }
    let mut input = Input {
        groups: Vec::new(),
        observed: Vec::new(),
        kernel: None,
        proto: Proto::Tcp,
        read: 0,
        duplicates: 0,
        names: Vec::new(),
        lines: false,
        warnings: Vec::new(),
    };
    let mut keeper = Keeper::new(args.max_observations);
    let mut first: Option<(String, String, Proto, Option<String>)> = None;
    for (ti, path) in args.traces.iter().enumerate() {
        // The events are checked and kept (once each) as they are read; a
        // trace is never held whole.
        let trace = Trace::read_streaming(path, &mut |i, e| {
            keeper.add(Observed {
                input: ti as u32,
                index: i as u64,
                group: ti,
                tuple: e.tuple(),
                listener: e.listener,
            })
        })?;
        let name = path.display().to_string();
        input.names.push(name.clone());
        let here = (
            name.clone(),
            trace.kernel.release.clone(),
            trace.group.proto,
            trace.machine.netns.clone(),
        );
        match &first {
            None => first = Some(here),
            Some((fname, release, proto, netns)) => {
                if *proto != here.2 || *release != here.1 {
                    return Err(RecoverCliError::Mixed(format!(
                        "{fname} ({release}, {proto:?}) and {name} ({}, {:?}) cannot share one key: each protocol has its own secret and each boot its own values; recover them separately",
                        here.1, here.2
                    )));
                }
                if *netns != here.3 || netns.as_deref().is_some_and(|n| n != "host") {
                    input.warnings.push(format!(
                        "{fname} and {name} were recorded in network namespaces {} and {}: each namespace mixes in its own net_hash_mix, so traces share a key only if they share the namespace",
                        netns.as_deref().unwrap_or("(unknown)"),
                        here.3.as_deref().unwrap_or("(unknown)")
                    ));
                }
            }
        }
        if let Some(bpf) = &trace.group.bpf {
            return Err(RecoverCliError::Refused {
                at: name,
                source: RecoverError::Setup(reuseport_model::SetupError::Group(
                    reuseport_model::error::GroupError::Unsupported {
                        what: format!("recovery from a group with a `{}` BPF program", bpf.kind),
                        why: "the program, not the hash, picks the member".into(),
                    },
                )),
            });
        }
        input.proto = trace.group.proto;
        input.groups.push(InputGroup {
            at: name.clone(),
            spec: trace.group.spec(Keys::default()),
        });
    }
    let (fname, release, ..) = first.ok_or(RecoverCliError::NoInput)?;
    input.read = keeper.read as usize;
    input.duplicates = keeper.duplicates;
    input.observed = keeper.kept;
    if input.observed.is_empty() {
        return Err(RecoverCliError::Empty(fname));
    }
    input.kernel = resolve_kernel(args.kernel.as_deref(), Some(&release))?;
    Ok(input)
}

pub(super) fn read_lines(
    args: &RecoverArgs,
    path: &str,
    stdin: impl Read,
) -> Result<Input, RecoverCliError> {
    let proto: Proto = args
        .proto
        .ok_or(RecoverCliError::MissingGroup("--proto"))?
        .into();
    let listeners = args
        .listeners
        .ok_or(RecoverCliError::MissingGroup("--listeners"))?;
    let kernel = resolve_kernel(args.kernel.as_deref(), None)?;
    let reader: Box<dyn BufRead + '_> = if path == "-" {
        // A signal while waiting for input stops the run at once.
        Box::new(BufReader::new(crate::signals::Stoppable(stdin)))
    } else {
        let f = std::fs::File::open(path).map_err(|source| RecoverCliError::Read {
            path: path.into(),
            source,
        })?;
        Box::new(BufReader::new(f))
    };
    let what = if path == "-" { "standard input" } else { path };
    let mut keeper = Keeper::new(args.max_observations);
    let mut buf = Vec::new();
    let mut reader = reader;
    let mut line = 0u64;
    let at = |line: u64| {
        if path == "-" {
            format!("line {line}")
        } else {
            format!("{path}: line {line}")
        }
    };
    let read_err = |source| {
        if crate::signals::stopped() {
            RecoverCliError::Interrupted
        } else {
            RecoverCliError::Read {
                path: what.into(),
                source,
            }
        }
    };
    while let Some(len) =
        crate::cmd::predict::read_capped_line(&mut reader, &mut buf, MAX_LINE).map_err(read_err)?
    {
        line += 1;
        if len > MAX_LINE {
            return Err(bad_line(at(line), crate::cmd::predict::too_long(len, &buf)));
        }
        let text = std::str::from_utf8(&buf)
            .map_err(|_| bad_line(at(line), "the line is not UTF-8 text"))?;
        match parse_observed_line(text) {
            Ok(None) => {}
            Ok(Some((tuple, listener))) => keeper.add(Observed {
                input: 0,
                index: line,
                group: 0,
                tuple,
                listener,
            }),
            Err(e) => return Err(bad_line(at(line), e)),
        }
    }
    let observed = keeper.kept;
    let first = observed
        .first()
        .ok_or_else(|| RecoverCliError::Empty(what.into()))?;
    let bind = args.group.bind.map_or(first.tuple.daddr, |b| b.addr);
    let port = args
        .group
        .bind
        .and_then(|b| b.port)
        .unwrap_or(first.tuple.dport);
    let spec = args
        .group
        .spec(proto, listeners, Keys::default(), bind, port);
    Ok(Input {
        groups: vec![InputGroup {
            at: "the group of --proto, --listeners and --bind".into(),
            spec,
        }],
        read: keeper.read as usize,
        duplicates: keeper.duplicates,
        observed,
        kernel,
        proto,
        names: vec![path.to_string()],
        lines: true,
        warnings: Vec::new(),
    })
}

/// The observations as constraints under one profile.
pub(super) fn plan_for(profile: &'static Profile, input: &Input) -> Result<Plan, RecoverCliError> {
    let mut plan: Option<Plan> = None;
    for g in &input.groups {
        let built = Host::spec_group(profile, &g.spec).map_err(|e| RecoverCliError::Group {
            at: g.at.clone(),
            problem: e.to_string(),
        })?;
        let refused = |source| RecoverCliError::Refused {
            at: g.at.clone(),
            source,
        };
        match &mut plan {
            None => plan = Some(Plan::new(&built).map_err(refused)?),
            Some(p) => {
                p.add_group(&built).map_err(refused)?;
            }
        }
    }
    let mut plan = plan.expect("at least one group");
    for o in &input.observed {
        plan.add(o.group, &o.tuple, o.listener)
            .map_err(|e| match e {
                RecoverError::Contradiction { earlier, .. } => bad_line(
                    input.at(o),
                    format!(
                        "{e} (observation {earlier} is {})",
                        input.at(&input.observed[earlier])
                    ),
                ),
                e => bad_line(input.at(o), e),
            })?;
    }
    Ok(plan)
}

/// One distinct search: a plan and the profiles that give it.
pub(super) struct Job {
    pub(super) plan: Plan,
    pub(super) profiles: Vec<&'static Profile>,
}

pub(super) fn jobs(input: &Input) -> Result<(Vec<Job>, Vec<Skipped>), RecoverCliError> {
    if let Some(p) = input.kernel {
        return Ok((
            vec![Job {
                plan: plan_for(p, input)?,
                profiles: vec![p],
            }],
            Vec::new(),
        ));
    }
    let mut jobs: Vec<Job> = Vec::new();
    let mut index: HashMap<(String, Vec<Obs>), usize> = HashMap::new();
    let mut skipped: Vec<Skipped> = Vec::new();
    for p in PROFILES {
        let selection = match input.proto {
            Proto::Tcp => p.tcp_selection,
            Proto::Udp => p.udp_selection,
        };
        let outcome = if selection == Selection::Reservoir {
            Err("reservoir era: not selected by socks[reciprocal_scale(hash, n)]".to_string())
        } else {
            plan_for(p, input).map_err(|e| e.to_string())
        };
        match outcome {
            Ok(plan) => {
                let key = (form_name(&plan), plan.constraints().to_vec());
                match index.get(&key) {
                    Some(&i) => jobs[i].profiles.push(p),
                    None => {
                        index.insert(key, jobs.len());
                        jobs.push(Job {
                            plan,
                            profiles: vec![p],
                        });
                    }
                }
            }
            Err(reason) => match skipped.iter_mut().find(|s| s.reason == reason) {
                Some(s) => s.profiles.push(p.release.to_string()),
                None => skipped.push(Skipped {
                    profiles: vec![p.release.to_string()],
                    reason,
                }),
            },
        }
    }
    if jobs.is_empty() {
        let why = skipped
            .iter()
            .map(|s| format!("{}: {}", s.profiles.join(", "), s.reason))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(RecoverCliError::NoProfile(why));
    }
    Ok((jobs, skipped))
}

/// `lport_plus`, `classic`, `classic_numeric_fport`, with `/old_jhash` for
/// the ≤ 4.0 jhash body.
pub(super) fn form_name(plan: &Plan) -> String {
    let (form, jh) = plan.form();
    let f = serde_json::to_value(form).expect("serializes");
    let f = f.as_str().expect("a string");
    match jh {
        reuseport_model::jhash::JhashForm::New => f.to_string(),
        reuseport_model::jhash::JhashForm::Old => format!("{f}/old_jhash"),
    }
}
