//! Per-worker connection counts as people post them, for the paste page's
//! observed counts and the scenario matcher ([`crate::sim::matcher`]).
//!
//! [`parse_counts`] reads, one worker per line:
//!
//! - Envoy's stats: `listener.0.0.0.0_10000.worker_3.downstream_cx_total: 349`
//!   (other stats lines are skipped);
//! - `uniq -c` output, the count first: `    349 1503175`,
//!   `349 users:(("nginx",pid=1503175,fd=6))`;
//! - a label and then the count: `worker PID 1503175 -> 349 connections`,
//!   `worker_3: 349`, `nginx-2 349`;
//! - a column of numbers, under an optional header (`connections`).
//!
//! Each count keeps a label naming the worker (its name, pid or row):
//! a label, never a listener number, since nothing in such a paste says
//! which socket of the group a worker holds. A line that holds no count,
//! or counts a worker a second time, is an error naming the line.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::MAX_LINE_BYTES;

/// One worker's count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LabelledCount {
    /// The worker as the paste names it (`worker_3`, `pid 1503175`, `#2`).
    pub label: String,
    /// Its connections (or requests).
    pub count: u64,
}

/// How the counts were written (the first count line's form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum CountForm {
    /// Envoy's `listener.<addr>.worker_N.downstream_cx_total: N`.
    Envoy,
    /// `uniq -c`: the count, then what was counted.
    UniqC,
    /// A label, then the count (`worker PID 1503175 -> 349 connections`).
    Labelled,
    /// A number alone on each line.
    Column,
}

/// Why a line gives no count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CountError {
    /// No count on the line.
    #[error("`{value}` holds no count: write one worker per line, as `worker_3: 349`, `349 worker_3` (uniq -c) or a number alone")]
    NoCount {
        /// The line's start.
        value: String,
    },
    /// A count that is not a whole number of at most 20 digits.
    #[error("count `{value}` is not a whole number (0, 1, 2, …, without separators)")]
    NotANumber {
        /// What the line holds where the count belongs.
        value: String,
    },
    /// The same worker counted twice.
    #[error("`{label}` was already counted on line {first}; count each worker once")]
    Duplicate {
        /// The worker.
        label: String,
        /// The line that counted it first.
        first: u32,
    },
    /// The line is longer than [`MAX_LINE_BYTES`].
    #[error("the line is {length} bytes long, more than the {max} a line may have")]
    TooLong {
        /// The limit.
        max: usize,
        /// The line's length.
        length: usize,
    },
}

/// A line's error, with its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CountLineError {
    /// The line.
    pub line: u32,
    /// What is wrong.
    pub error: CountError,
}

/// What [`parse_counts`] read.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Counted {
    /// The form of the first count line; `None` when no line had a count.
    pub form: Option<CountForm>,
    /// The counts in the paste's order.
    pub counts: Vec<LabelledCount>,
    /// The lines that gave no count.
    pub errors: Vec<CountLineError>,
    /// Lines skipped: blank, comments, prompts, a header, other Envoy stats.
    pub skipped: u32,
}

impl Counted {
    /// The counts alone, in order (what [`crate::sim::matcher::Observed`]
    /// takes).
    pub fn values(&self) -> Vec<u64> {
        self.counts.iter().map(|c| c.count).collect()
    }
}

/// Words that say a number is a count (in a header or after the number).
fn count_word(w: &str) -> bool {
    let w = w
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_ascii_lowercase();
    matches!(
        w.as_str(),
        "connections"
            | "connection"
            | "conns"
            | "conn"
            | "cx"
            | "count"
            | "counts"
            | "requests"
            | "reqs"
            | "accepted"
            | "accepts"
            | "total"
            | "n"
    )
}

fn number(s: &str) -> Option<u64> {
    (!s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `users:(("nginx",pid=1503175,fd=6))` as `nginx pid 1503175`; other
/// labels as written.
fn label_of(s: &str) -> String {
    let s = s.trim();
    if let Some(i) = s.find("pid=") {
        let pid: String = s[i + 4..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let name = s
            .split('"')
            .nth(1)
            .filter(|n| !n.is_empty() && s.starts_with("users:"));
        if !pid.is_empty() {
            return match name {
                Some(n) => format!("{n} pid {pid}"),
                None => format!("pid {pid}"),
            };
        }
    }
    super::shown(s)
}

/// The label before a count, without the separators people put between
/// (`->`, `:`, `=`, `,`).
fn trim_label(s: &str) -> &str {
    s.trim().trim_end_matches(|c: char| {
        matches!(c, ':' | '=' | ',' | '-' | '>' | '|') || c.is_whitespace()
    })
}

/// One line's reading.
enum Read {
    Skip,
    Header(bool),
    Count(CountForm, String, u64),
    Envoy(String, String, u64),
    Err(CountError),
}

/// An Envoy stats line: `listener.ADDR.worker_N.downstream_cx_total: N`
/// as (ADDR, worker_N, N); other stats are skipped.
fn envoy(t: &str) -> Option<Read> {
    let rest = t.strip_prefix("listener.")?;
    let Some((name, value)) = rest.split_once(':') else {
        return Some(Read::Skip);
    };
    let Some(prefix) = name.strip_suffix(".downstream_cx_total") else {
        return Some(Read::Skip);
    };
    let Some((addr, worker)) = prefix.rsplit_once(".worker_") else {
        return Some(Read::Skip);
    };
    let value = value.trim();
    Some(match number(value) {
        Some(n) => Read::Envoy(addr.to_string(), format!("worker_{worker}"), n),
        None => Read::Err(CountError::NotANumber {
            value: super::shown(value),
        }),
    })
}

fn read_line(t: &str, count_first: bool) -> Read {
    if let Some(r) = envoy(t) {
        return r;
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    let Some(first) = words.first() else {
        return Read::Skip;
    };
    // A header: words only, no number.
    if words.iter().all(|w| !w.bytes().any(|b| b.is_ascii_digit())) {
        let last = words[words.len() - 1];
        return Read::Header(words.len() > 1 && count_word(last) && !count_word(first));
    }
    if words.len() == 1 {
        return match number(first) {
            Some(n) => Read::Count(CountForm::Column, String::new(), n),
            None => Read::Err(CountError::NotANumber {
                value: super::shown(first),
            }),
        };
    }
    // The count last, perhaps followed by a unit word.
    let last = words.len() - 1;
    let at = if count_word(words[last]) && last > 0 {
        last - 1
    } else {
        last
    };
    let first_n = number(first);
    let last_n = number(words[at]);
    match (first_n, last_n) {
        (Some(n), Some(_)) if count_first || at == 0 => {
            Read::Count(CountForm::UniqC, label_of(&words[1..].join(" ")), n)
        }
        (_, Some(n)) if at > 0 => {
            let label = trim_label(&words[..at].join(" ")).to_string();
            Read::Count(CountForm::Labelled, label_of(&label), n)
        }
        (Some(n), None) => Read::Count(CountForm::UniqC, label_of(&words[1..].join(" ")), n),
        _ => Read::Err(CountError::NoCount {
            value: super::shown(t),
        }),
    }
}

/// Reads per-worker counts (see the module docs). No input makes it
/// panic; every line is accounted for as a count, a skip or an error.
pub fn parse_counts(text: &str) -> Counted {
    let mut out = Counted::default();
    let mut seen: HashMap<String, u32> = HashMap::new();
    // Envoy lines wait for the end: their labels carry the listener's
    // address only when the block has several listeners.
    let mut envoy: Vec<(u32, String, String, u64)> = Vec::new();
    let mut header: Option<String> = None;
    // Two numbers on a line: the count first (uniq -c) unless a header
    // puts the count last (`pid connections`).
    let mut count_first = true;
    let mut column = 0u32;
    let mut counted = |out: &mut Counted, line: u32, label: String, count: u64| {
        if let Some(&first) = seen.get(&label) {
            out.errors.push(CountLineError {
                line,
                error: CountError::Duplicate { label, first },
            });
        } else {
            seen.insert(label.clone(), line);
            out.counts.push(LabelledCount { label, count });
        }
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i as u32 + 1;
        if raw.len() > MAX_LINE_BYTES {
            out.errors.push(CountLineError {
                line,
                error: CountError::TooLong {
                    max: MAX_LINE_BYTES,
                    length: raw.len(),
                },
            });
            continue;
        }
        let t = raw.trim_start_matches('\u{feff}').trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with("$ ") || super::is_prompt(t) {
            out.skipped += 1;
            continue;
        }
        match read_line(t, count_first) {
            Read::Skip => out.skipped += 1,
            Read::Header(count_last) => {
                out.skipped += 1;
                if header.is_none() && out.counts.is_empty() {
                    header = Some(super::shown(t));
                    count_first = !count_last;
                }
            }
            Read::Envoy(addr, worker, n) => {
                out.form.get_or_insert(CountForm::Envoy);
                envoy.push((line, addr, worker, n));
            }
            Read::Count(form, label, n) => {
                out.form.get_or_insert(form);
                let label = if form == CountForm::Column {
                    column += 1;
                    match &header {
                        Some(h) => format!("{h} #{column}"),
                        None => format!("#{column}"),
                    }
                } else {
                    label
                };
                counted(&mut out, line, label, n);
            }
            Read::Err(error) => out.errors.push(CountLineError { line, error }),
        }
    }
    let several = envoy.iter().any(|(_, a, _, _)| *a != envoy[0].1);
    for (line, addr, worker, n) in envoy {
        let label = if several {
            format!("{addr} {worker}")
        } else {
            worker
        };
        counted(&mut out, line, label, n);
    }
    out.errors.sort_by_key(|e| e.line);
    out
}
