//! Datagram lines: a tuple line (`SADDR:SPORT DADDR:DPORT` or the four
//! fields), then optional `payload=HEX` (the bytes a group program reads)
//! and `cpu=N` (the receiving CPU, `SKF_AD_CPU`), in either order.

use super::{PacketCtx, Payload};
use crate::tuple::{parse_tuple_line, Tuple};

/// The highest CPU number a line may give: `NR_CPUS` of the largest
/// distribution kernels (8192), a bound on input.
pub const MAX_CPU: u32 = 8191;

/// One datagram read from a line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Datagram {
    /// Its addresses and ports, client first.
    pub tuple: Tuple,
    /// The receiving CPU and the payload.
    pub ctx: PacketCtx,
}

/// Reads one line; blank lines and `#` comments give `Ok(None)`. The error
/// says what is wrong with the line (the caller adds its number).
pub fn parse_datagram_line(line: &str) -> Result<Option<Datagram>, String> {
    let mut rest = line.trim_end();
    let mut ctx = PacketCtx::default();
    let (mut saw_payload, mut saw_cpu) = (false, false);
    // Trailing key=value fields, read from the end.
    while let Some((head, last)) = rest.rsplit_once(char::is_whitespace) {
        if let Some(hex) = last.strip_prefix("payload=") {
            if std::mem::replace(&mut saw_payload, true) {
                return Err("payload= is given twice".into());
            }
            ctx.payload = Some(Payload::from_hex(hex)?);
        } else if let Some(n) = last.strip_prefix("cpu=") {
            if std::mem::replace(&mut saw_cpu, true) {
                return Err("cpu= is given twice".into());
            }
            ctx.cpu = n
                .parse::<u32>()
                .ok()
                .filter(|&c| c <= MAX_CPU)
                .ok_or_else(|| format!("cpu=`{n}` is not a CPU number from 0 to {MAX_CPU}"))?;
        } else {
            break;
        }
        rest = head.trim_end();
    }
    let tuple = parse_tuple_line(rest).map_err(|e| e.to_string())?;
    match tuple {
        Some(tuple) => Ok(Some(Datagram { tuple, ctx })),
        None if saw_payload || saw_cpu => Err("payload= or cpu= without a tuple before it".into()),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_gives_its_payload_and_cpu_in_either_order() {
        let d = parse_datagram_line("192.0.2.1:40000 127.0.0.1:443 cpu=1 payload=c0ff")
            .unwrap()
            .unwrap();
        assert_eq!(d.tuple.sport, 40000);
        assert_eq!(d.ctx.cpu, 1);
        assert_eq!(d.ctx.payload, Some(Payload::Bytes(vec![0xc0, 0xff])));
        let e = parse_datagram_line("192.0.2.1 40000 127.0.0.1 443 payload=00 cpu=0")
            .unwrap()
            .unwrap();
        assert_eq!(e.ctx.payload, Some(Payload::Bytes(vec![0])));
        assert_eq!(parse_datagram_line("  # a comment").unwrap(), None);
    }

    #[test]
    fn a_bad_field_says_which() {
        let odd = parse_datagram_line("192.0.2.1:1 127.0.0.1:2 payload=abc").unwrap_err();
        assert!(odd.contains("odd number"), "{odd}");
        let cpu = parse_datagram_line("192.0.2.1:1 127.0.0.1:2 cpu=9000").unwrap_err();
        assert!(cpu.contains("cpu="), "{cpu}");
        let twice = parse_datagram_line("192.0.2.1:1 127.0.0.1:2 cpu=1 cpu=2").unwrap_err();
        assert!(twice.contains("twice"), "{twice}");
    }
}
