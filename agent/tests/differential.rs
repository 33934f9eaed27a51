//! The differential test's driver (agent/src/cmd/verify/differential/) with a draw of
//! its own: what it reports when the kernel's side answers differently on
//! the first build than on every later one.

#![cfg(target_os = "linux")]

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

use reuseport_agent::cmd::verify::differential::{
    run, Answer, Draw, Drawing, Found, Lookups, Options, Rng, Words,
};
use reuseport_model::{Profile, Proto};
use serde::Serialize;

/// Builds of the one case so far.
static BUILDS: AtomicU32 = AtomicU32::new(0);

/// One case, two calls; the kernel refuses the second call on the first
/// build only, as a bind refused for a few milliseconds would be.
struct Flaky;

#[derive(Clone)]
struct Answers(Vec<Answer>, Lookups);

#[derive(Serialize)]
struct Shown {
    calls: usize,
    differences: Vec<String>,
    kernel: Vec<Answer>,
}

impl Draw for Flaky {
    type Case = Vec<u8>;
    type Answers = Answers;
    type Line = Vec<Answer>;
    type Disagreement = Shown;
    type Helpers = ();
    const WORDS: Words = Words {
        command: "flaky",
        thing: "case",
        things: "cases",
        answers: "answers",
        member: "socket",
        parts: "calls",
    };
    fn draw(_: &mut Rng, _: u16, _: bool, _: bool) -> Vec<u8> {
        vec![0, 1]
    }
    fn with_port(c: &Vec<u8>, _: u16) -> Vec<u8> {
        c.clone()
    }
    fn proto_port(_: &Vec<u8>) -> (Proto, u16) {
        (Proto::Tcp, 8080)
    }
    fn size(c: &Vec<u8>) -> usize {
        c.len()
    }
    fn smaller(c: &Vec<u8>) -> Vec<Vec<u8>> {
        (0..c.len())
            .map(|i| [&c[..i], &c[i + 1..]].concat())
            .filter(|s| !s.is_empty())
            .collect()
    }
    fn compact(c: &Vec<u8>) -> String {
        format!("{c:?}")
    }
    fn model_answers(_: &'static Profile, c: &Vec<u8>) -> Result<Answers, String> {
        Ok(Answers(vec![None; c.len()], Vec::new()))
    }
    fn compare(_: &Vec<u8>, k: &Answers, m: &Answers) -> Vec<(Answer, Answer, Option<String>)> {
        (k.0.iter().zip(&m.0).enumerate())
            .map(|(i, (&k, &m))| (k, m, (k != m).then(|| format!("call {i} differs"))))
            .collect()
    }
    fn lookups(a: &Answers) -> &Lookups {
        &a.1
    }
    fn helpers() {}
    fn kernel_answers(c: &Vec<u8>, _: &mut u64, _: &mut ()) -> Answers {
        let first = BUILDS.fetch_add(1, Ordering::SeqCst) == 0;
        let answers = c
            .iter()
            .map(|&x| (first && x == 1).then_some(EADDRINUSE))
            .collect();
        Answers(answers, Vec::new())
    }
    fn line(_: u32, _: &Vec<u8>, _: &Drawing, a: Answers) -> Vec<Answer> {
        a.0
    }
    fn read_line(l: Vec<Answer>, n: usize, _: &mut Rng) -> Result<(u32, Vec<u8>, Answers), String> {
        Ok((n as u32, vec![0, 1], Answers(l, Vec::new())))
    }
    fn disagreement(_: u32, _: &Vec<u8>, shown: Vec<u8>, f: Found<Answers>) -> Shown {
        Shown {
            calls: shown.len(),
            differences: f.differences,
            kernel: f.kernel.0,
        }
    }
    fn write_disagreement(d: &Shown, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "{:?}", d.differences)
    }
}

/// EADDRINUSE on Linux.
const EADDRINUSE: i32 = 98;

/// A disagreement the later builds do not repeat (timing, not a rule) is
/// still a disagreement: shown as drawn, unshrunk, with the first build's
/// answers and a line saying it did not repeat, and the run is not exact.
#[test]
fn a_disagreement_that_does_not_repeat_is_reported_as_drawn_and_still_counts() {
    let opts = Options {
        count: 1,
        seed: 1,
        json: false,
    };
    let mut out = Vec::new();
    let r = run::<Flaky>(&opts, &mut out, &mut std::io::sink()).unwrap();
    assert_eq!((r.counts.layouts, r.counts.agreed), (1, 0));
    assert!(!r.exact());
    assert!(
        BUILDS.load(Ordering::SeqCst) > 2,
        "the case was built again"
    );
    let d = &r.disagreements[..];
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].calls, 2, "not shrunk");
    assert_eq!(
        d[0].kernel,
        vec![None, Some(EADDRINUSE)],
        "the first build's answers"
    );
    assert_eq!(
        d[0].differences,
        vec![
            "call 1 differs".to_string(),
            "did not repeat when built again".to_string()
        ]
    );
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("flaky: DISAGREEMENT on 1 of 1 cases"),
        "{text}"
    );
}
