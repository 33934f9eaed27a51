//! Paste parsing speed: one million lines of `ss -tn` output (IPv4 and
//! IPv6, in the layout of tests/fixtures/paste/ss-tn.txt) through
//! `detect`, `Parser::line`, `Sides` and `Decision::orient`. Prints lines
//! per second; asserts only that every line was read.
//!
//! `cargo bench -p reuseport-model --bench paste [-- --lines N]`.

mod common;

use std::hint::black_box;
use std::time::Instant;

use reuseport_model::paste::{detect, Line, Parser, Sides};

fn main() {
    let n: usize = common::option("--lines").unwrap_or(1_000_000);
    let mut text = String::from(
        "State Recv-Q Send-Q      Local Address:Port        Peer Address:Port Process\n",
    );
    for i in 0..n {
        let port = 1024 + (i % 60000);
        if i % 4 == 3 {
            text.push_str(&format!(
                "ESTAB 0      0                   [::1]:443              [fd00::{:x}]:{port}       \n",
                i % 65536
            ));
        } else {
            text.push_str(&format!(
                "ESTAB 0      0               10.0.0.1:443          10.{}.{}.{}:{port}       \n",
                (i >> 16) & 255,
                (i >> 8) & 255,
                i & 255
            ));
        }
    }
    let bytes = text.len();
    let start = Instant::now();
    let lines: Vec<&str> = text.lines().take(64).collect();
    let detected = detect(&lines);
    let parser = Parser::new(&detected);
    let mut sides = Sides::new(None);
    let mut conns = Vec::with_capacity(n);
    for l in text.lines() {
        if let Ok(Line::Conn(c)) = parser.line(l) {
            sides.add(&c);
            conns.push(c);
        }
    }
    let parsed = start.elapsed();
    let decision = sides.decide();
    let oriented = conns
        .iter()
        .filter(|c| black_box(decision.orient(c, false)).is_ok())
        .count();
    let total = start.elapsed();
    assert_eq!(conns.len(), n);
    assert_eq!(oriented, n);
    println!(
        "{n} ss -tn lines ({:.1} MB, format {}): parsed in {:.3} s ({:.2} M lines/s, {:.0} MB/s); with orientation ({:?}, port {:?}) {:.3} s",
        bytes as f64 / 1e6,
        detected.format,
        parsed.as_secs_f64(),
        n as f64 / parsed.as_secs_f64() / 1e6,
        bytes as f64 / parsed.as_secs_f64() / 1e6,
        decision.basis,
        decision.port,
        total.as_secs_f64(),
    );
}
