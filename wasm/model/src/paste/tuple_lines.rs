//! Pasted tuple text read line by line (`SADDR SPORT DADDR DPORT` or
//! `SADDR:SPORT DADDR:DPORT`): each line's tuple or its error
//! ([`ParsedLine`], the record the page receives). A group's answer per
//! line is the explain module's `LineAnswer`.

use serde::Serialize;

use super::LineError;
use crate::tuple::{parse_tuple_line, Tuple};

/// A field a variant of these unions never has. It is never written; in
/// TypeScript it reads `?: undefined`, so the page may test any variant's
/// fields (`p.error !== undefined`) to tell the variants apart.
pub type Absent = Option<()>;

/// One parsed line of pasted text: its tuple, or why it is not one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(untagged)]
pub enum ParsedLine {
    /// The line holds a tuple.
    Tuple {
        /// The line number, from 1.
        line: u32,
        /// Its tuple.
        tuple: Tuple,
        /// Never written.
        #[serde(skip_serializing)]
        #[cfg_attr(feature = "ts", ts(optional, type = "undefined"))]
        error: Absent,
    },
    /// The line is not a tuple.
    Error {
        /// The line number, from 1.
        line: u32,
        /// Why, as the model's structured line error.
        error: LineError,
        /// Never written.
        #[serde(skip_serializing)]
        #[cfg_attr(feature = "ts", ts(optional, type = "undefined"))]
        tuple: Absent,
    },
}

/// A tuple line's parse error as the model's structured line error, which
/// the pages say in their language. Every error of [`parse_tuple_line`] is
/// about the line; the fallback is never reached.
fn line_error(e: &crate::ParseError) -> LineError {
    LineError::from_tuple(e).unwrap_or(LineError::Unrecognized {
        format: super::Format::Pairs,
        value: e.to_string(),
    })
}

/// Each line of `text` that holds a tuple or an error, numbered from 1;
/// blank and `#` lines are skipped.
pub fn parse_tuples(text: &str) -> Vec<ParsedLine> {
    tuple_lines(text)
        .map(|(line, parsed)| match parsed {
            Ok(tuple) => ParsedLine::Tuple {
                line,
                tuple,
                error: None,
            },
            Err(error) => ParsedLine::Error {
                line,
                error,
                tuple: None,
            },
        })
        .collect()
}

/// The lines that hold something, numbered from 1, each parsed.
pub fn tuple_lines(text: &str) -> impl Iterator<Item = (u32, Result<Tuple, LineError>)> + '_ {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| match parse_tuple_line(l) {
            Ok(None) => None,
            Ok(Some(t)) => Some((i as u32 + 1, Ok(t))),
            Err(e) => Some((i as u32 + 1, Err(line_error(&e)))),
        })
}
