//! The one way `predict` answers: a host replayed from calls. The calls
//! come from `--layout FILE`, or the group options write them
//! ([`CallLog::from_group_checked`]); both replay through [`replay`].

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr};

use reuseport_model::lookup::{Call, CallLog, Host, Packet};
use reuseport_model::{Profile, ReuseportGroup, SetupError, Tuple};
use serde::Serialize;

use super::lines::{answer_lines, Reading};
use super::output::{
    emit, Explained, HashHex, Header, Prediction, Refused, Routed, Shown, SocketResult,
};
use super::{Bind, Outcome, PredictArgs};
use crate::error::{Error, LineError};

/// Replays `log` in `profile`: the host every mode of `predict` answers
/// from.
fn replay(profile: &'static Profile, log: &CallLog) -> Result<Host, String> {
    Host::run(profile, log).map_err(|e| e.to_string())
}

/// A port for the group while no tuple has given one, to learn whether the
/// options' calls succeed before any input is read: none of the calls'
/// answers depends on which port it is.
const UNKNOWN_PORT: u16 = 8080;

/// The group the options describe, bound to `bind:port`: the calls they
/// stand for replayed, each of which must succeed, and the group that
/// picks, with the fd (listener number) of each member.
fn shorthand(
    args: &PredictArgs,
    profile: &'static Profile,
    bind: IpAddr,
    port: u16,
) -> Result<(ReuseportGroup, Vec<usize>), Error> {
    let spec = args.spec(bind, port);
    let log = CallLog::from_group_checked(profile, &spec).map_err(Error::Group)?;
    let host = replay(profile, &log).map_err(Error::Shorthand)?;
    let refused = host
        .answers()
        .iter()
        .enumerate()
        .find_map(|(i, a)| Some((i, a.as_ref()?)));
    if let Some((i, r)) = refused {
        return Err(Error::Refused {
            call: i,
            what: serde_json::to_string(&log.calls[i]).unwrap_or_default(),
            errno: serde_json::to_value(r.errno)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            why: crate::messages::refusal(r),
        });
    }
    // The group era: the one group the calls make. Before it, the chain
    // of the sockets still receiving; with none, an empty group.
    if let (Some(g), Some(fds)) = (host.group(0), host.group_members(0)) {
        return Ok((g.clone(), fds.to_vec()));
    }
    Ok((0..host.sockets())
        .find_map(|fd| host.chain_of(fd))
        .unwrap_or_else(|| (ReuseportGroup::build_empty(profile, &spec), Vec::new())))
}

/// The listener number of member `m`: its fd.
fn fd_of(fds: &[usize], m: Option<u32>) -> Option<u32> {
    m.map(|m| fds.get(m as usize).map_or(m, |&fd| fd as u32))
}

/// `predict` with `--secret`: each tuple answered by the group.
pub(super) fn run_group(
    args: &PredictArgs,
    profile: &'static Profile,
    input: impl Read,
    mut out: impl Write,
    reading: Reading<'_>,
) -> Result<Outcome, Error> {
    let mut group = match args.group.bind {
        Some(Bind {
            addr,
            port: Some(port),
        }) => Some(shorthand(args, profile, addr, port)?),
        bind => {
            // Address or port come from the first tuple line. Whether the
            // kernel accepts the group does not depend on them: find out now.
            let addr = bind.map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |b| b.addr);
            shorthand(args, profile, addr, UNKNOWN_PORT)?;
            None
        }
    };
    answer_lines(input, &mut out, reading, |out, line, t, note| {
        if t.is_v6() && args.inner_secret.is_none() {
            return Ok(Err(SetupError::MissingInnerSecret.into()));
        }
        if group.is_none() {
            let bind = args.group.bind.map_or(t.daddr, |b| b.addr);
            let port = args.group.bind.and_then(|b| b.port).unwrap_or(t.dport);
            group = Some(shorthand(args, profile, bind, port)?);
        }
        let (g, fds) = group.as_ref().expect("built above");
        let ctx = args.ctx(note.payload.clone());
        let written = if args.explain {
            g.explain_ctx(&t, &ctx)
                .map(|x| emit(out, &Explained { line, explain: &x }))
        } else {
            g.select_ctx(&t, &ctx).map(|c| {
                emit(
                    out,
                    &Prediction {
                        line,
                        tuple: Shown(&t),
                        profile: Shown(profile.release),
                        listener: fd_of(fds, c.listener),
                        slot: c.slot,
                        hash: Shown(HashHex(c.hash)),
                        note: note.note(),
                        side: note.basis(),
                    },
                )
            })
        };
        match written {
            Ok(w) => w.map(Ok),
            Err(e) => Ok(Err(LineError::from(e))),
        }
    })
}

/// The seed of the random boots, the lookup page's (src/model/paste-worker.ts).
pub const SPREAD_SEED: u64 = 0x5eed;

/// `predict` without `--secret`: the connections are read (and oriented)
/// as with one, their line errors written as usual, and then one object
/// `{"spread": Spread, "seed"}`: per-listener counts over `--boots` random
/// boots ([`reuseport_model::spread`]), what holds for every secret.
pub(super) fn run_spread(
    args: &PredictArgs,
    profile: &'static Profile,
    input: impl Read,
    mut out: impl Write,
    reading: Reading<'_>,
) -> Result<Outcome, Error> {
    let bind = args.group.bind;
    let addr = bind.map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |b| b.addr);
    // An impossible group is refused before any input is read.
    shorthand(args, profile, addr, UNKNOWN_PORT)?;
    let mut tuples: Vec<Tuple> = Vec::new();
    let mut outcome = answer_lines(input, &mut out, reading, |_, _, t, _| {
        tuples.push(t);
        Ok(Ok(()))
    })?;
    let Some(first) = tuples.first() else {
        return Ok(outcome);
    };
    let (group, _) = shorthand(
        args,
        profile,
        bind.map_or(first.daddr, |b| b.addr),
        bind.and_then(|b| b.port).unwrap_or(first.dport),
    )?;
    let mut run = reuseport_model::spread::SpreadRun::new(group, &tuples, SPREAD_SEED)
        .map_err(Error::Spread)?
        .on_cpu(args.cpu);
    run.step(args.boots);
    #[derive(Serialize)]
    struct Spread {
        spread: reuseport_model::spread::Spread,
        seed: String,
    }
    emit(
        &mut out,
        &Spread {
            spread: run.summary(),
            seed: format!("{SPREAD_SEED:#x}"),
        },
    )?;
    out.flush().map_err(Error::Output)?;
    // Lines answered: every tuple counted in the spread.
    outcome.answered = tuples.len() as u64;
    Ok(outcome)
}

/// The largest layout file `predict --layout` reads: above the largest
/// call log the model replays (262,144 calls of a few hundred bytes).
pub const MAX_LAYOUT_BYTES: u64 = 64 << 20;

/// `predict --layout`: the full lookup over the sockets of a layout file.
pub(super) fn run_layout(
    args: &PredictArgs,
    profile: &'static Profile,
    path: &std::path::Path,
    input: impl Read,
    mut out: impl Write,
    mut reading: Reading<'_>,
) -> Result<Outcome, Error> {
    let shown = path.display().to_string();
    let text = crate::read_capped(path, MAX_LAYOUT_BYTES, "a layout")
        .map_err(|e| Error::Layout(format!("cannot read {shown}: {e}")))?;
    // A call log; the socket-list form {sockets, listenOrder, closed} is
    // converted into calls as it is read (the reader at the edge).
    let mut layout: CallLog =
        serde_json::from_str(&text).map_err(|e| Error::Layout(format!("{shown}: {e}")))?;
    if let Some(secret) = args.secret {
        layout.keys.v4 = secret;
        layout.keys.v6_outer = secret;
    }
    if let Some(inner) = args.inner_secret {
        layout.keys.v6_inner = inner;
    }
    let proto = match args.proto {
        Some(p) => p.into(),
        None => {
            let mut protos = layout.calls.iter().filter_map(|c| match c {
                Call::Socket { proto, .. } => Some(*proto),
                _ => None,
            });
            let first = protos
                .next()
                .ok_or_else(|| Error::Layout(format!("{shown}: the layout has no sockets")))?;
            if protos.any(|p| p != first) {
                return Err(Error::Layout(format!(
                    "{shown} mixes TCP and UDP sockets: say which the packets are with --proto"
                )));
            }
            first
        }
    };
    let host = replay(profile, &layout).map_err(|e| Error::Layout(format!("{shown}: {e}")))?;
    emit(
        &mut out,
        &Header {
            answers: host
                .answers()
                .iter()
                .map(|a| a.as_ref().map(Refused::from))
                .collect(),
            sockets: host.results().into_iter().map(SocketResult::from).collect(),
        },
    )?;
    reading.proto = Some(proto);
    answer_lines(input, &mut out, reading, |out, line, t, note| {
        let packet = Packet {
            proto,
            tuple: t,
            device: None,
            ctx: args.ctx(note.payload.clone()),
        };
        let x = host.lookup(&packet);
        if args.explain {
            emit(out, &Explained { line, explain: &x })?;
        } else {
            let (group, member) = match &x.group {
                Some(g) if x.socket.is_some_and(|s| g.members.contains(&s)) => (
                    Some(g.group),
                    g.members
                        .iter()
                        .position(|&m| Some(m) == x.socket)
                        .map(|i| i as u32),
                ),
                _ => (None, None),
            };
            emit(
                out,
                &Routed {
                    line,
                    tuple: Shown(&t),
                    profile: Shown(profile.release),
                    socket: x.socket,
                    group,
                    member,
                    reason: x
                        .reason
                        .as_ref()
                        .map(|r| crate::messages::say("lookup_reason", r))
                        .unwrap_or_default(),
                    note: note.note(),
                    side: note.basis(),
                },
            )?;
        }
        Ok(Ok(()))
    })
}
