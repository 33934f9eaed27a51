//! One paste read line by line (`paste::Session`), as the page's worker and
//! the command line both read it: what comes out, and when. The lines are
//! `ss -tn` output written by hand; the expected rows are counted by hand
//! from them.

use std::net::IpAddr;

use reuseport_model::paste::session::{Options, Read, Unused as Why};
use reuseport_model::paste::{Format, Session};
use reuseport_model::Tuple;

/// Server 10.0.0.1:8080 seen from the server: Local first, then Peer.
const SS: &[&str] = &[
    "State Recv-Q Send-Q Local Address:Port Peer Address:Port Process",
    "ESTAB 0 0 10.0.0.1:8080 10.0.0.2:40000",
    "ESTAB 0 0 10.0.0.1:8080 10.0.0.3:40001",
    "ESTAB 0 0 10.0.0.1:8080 10.0.0.2:40000",
    "ESTAB 0 0 10.0.0.1:8080 not-an-address:1",
    "ESTAB 0 0 10.0.0.1:8080 10.0.0.4:40002",
];

/// What came out, as (line, client, or the error's kind), in order.
fn run(options: Options, lines: &[&str]) -> Vec<(u32, String)> {
    let mut session: Session<Why> = Session::new(options);
    let mut out = Vec::new();
    let mut put = |r: Read<Why>| {
        out.push(match r {
            Read::Row { line, tuple, .. } => (line, tuple.saddr.to_string()),
            Read::Bad { line, error, .. } => {
                (line, format!("{error:?}").chars().take(12).collect())
            }
        })
    };
    for l in lines {
        session.line(l, &mut put);
    }
    session.finish(&mut put);
    let counts = session.counts();
    assert_eq!(counts.lines, lines.len() as u32);
    assert_eq!(counts.duplicates, 1, "line 4 repeats line 2");
    out
}

fn ss() -> Options {
    Options {
        named: Some(Format::Ss),
        ..Options::default()
    }
}

#[test]
fn without_the_port_every_line_waits_for_the_decision_and_comes_out_in_order() {
    let out = run(ss(), SS);
    let lines: Vec<u32> = out.iter().map(|(l, _)| *l).collect();
    // Line 1 is the header (skipped), line 4 a repeat of line 2 (dropped);
    // line 5 does not parse.
    assert_eq!(lines, vec![2, 3, 5, 6]);
    assert_eq!(out[0].1, "10.0.0.2");
    assert_eq!(out[1].1, "10.0.0.3");
    assert!(out[2].1.starts_with("Line("), "{:?}", out[2]);
    assert_eq!(out[3].1, "10.0.0.4");
}

#[test]
fn with_the_port_each_line_comes_out_as_it_is_read() {
    let mut session: Session<Why> = Session::new(Options {
        bind: Some(("10.0.0.1".parse::<IpAddr>().unwrap(), Some(8080))),
        ..ss()
    });
    // The format is named, but the session still reads a sample first
    // unless the reader gives what it detected: give it.
    let mut session_given: Session<Why> = Session::new(Options {
        detected: Some(reuseport_model::paste::Detected::named(Format::Ss, SS)),
        bind: Some(("10.0.0.1".parse::<IpAddr>().unwrap(), Some(8080))),
        ..Options::default()
    });
    let mut seen: Vec<Tuple> = Vec::new();
    let mut counts_after = Vec::new();
    for l in SS {
        session_given.line(l, &mut |r| {
            if let Read::Row { tuple, .. } = r {
                seen.push(tuple)
            }
        });
        counts_after.push(seen.len());
    }
    // Rows out after lines 1..6: none for the header, one each for lines 2
    // and 3, none for the repeat and the bad line, one for line 6.
    assert_eq!(counts_after, vec![0, 1, 2, 2, 2, 3]);
    let mut late = 0;
    session_given.finish(&mut |_| late += 1);
    assert_eq!(late, 0, "nothing waited");
    // Without the detected format, the first lines wait for detection.
    let mut early = 0;
    for l in SS {
        session.line(l, &mut |_| early += 1);
    }
    assert_eq!(early, 0, "fewer lines than the detection sample");
    session.finish(&mut |_| early += 1);
    assert_eq!(early, 4);
}

#[test]
fn connections_past_the_bound_are_counted_and_not_kept() {
    let mut session: Session<Why> = Session::new(Options {
        max_rows: Some(2),
        ..ss()
    });
    let mut rows = 0;
    for l in SS {
        session.line(l, &mut |r| rows += matches!(r, Read::Row { .. }) as u32);
    }
    session.finish(&mut |r| rows += matches!(r, Read::Row { .. }) as u32);
    // Five lines hold a connection; the line that does not parse is none.
    // The first two are kept, the other two are cut.
    assert_eq!(rows, 2);
    assert_eq!(session.counts().cut, 2);
}
