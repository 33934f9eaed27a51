//! The reuseport hash: the connection ("established") hash of the incoming
//! packet's 4-tuple, per protocol, family and era (kernel-history.md §2).
//!
//! Arguments follow the kernel: `laddr` is the local address the lookup pass
//! hashes (the packet's destination, or 0 for a wildcard group from 5.0),
//! `lport` the destination port as a host-order number, `faddr` the client
//! address and `fport` the client port, which enters raw (network order).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::jhash::{final_c, jhash2, jhash_3words, mix, JhashForm};
use crate::message::{JhashRole, KernelSource, LaddrReason};
use crate::profile::{Profile, V4Form, V6Form};
use crate::tuple::{port_raw, v4_word, v6_words, Proto};

/// The per-boot values the kernel keys the hash with, as opaque 32-bit
/// inputs (kernel-history.md §2.5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Keys {
    /// IPv4: the jhash initval, `secret + net_hash_mix(net)` of the
    /// protocol's hash function (`inet_ehash_secret` or `udp_ehash_secret`).
    pub v4: u32,
    /// IPv6 outer value. For the classic and `lport +` forms: the outer
    /// initval, `inet6_ehash_secret + net_hash_mix` (UDP before 6.5:
    /// `udp_ipv6_hash_secret + net_hash_mix`). For the 7.2 single-pass form:
    /// `net_hash_mix` alone, which that form XORs into the first word.
    pub v6_outer: u32,
    /// IPv6 inner value: the initval of the foreign-address hash
    /// (`ipv6_hash_secret`, later `tcp_ipv6_hash_secret`, or
    /// `udp_ipv6_hash_secret`); the only key of the 7.2 single-pass form.
    pub v6_inner: u32,
}

/// One call into the Jenkins hash, with its exact inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct JhashCall {
    /// `jhash_3words`, `jhash2` or `jhash (single pass)`.
    pub function: String,
    /// What this call computes.
    pub role: JhashRole,
    /// The words fed in, in order, as 8-digit hex in kernel byte order.
    pub words: Vec<String>,
    /// The initval, hex.
    pub initval: String,
    /// The returned value, hex.
    pub result: String,
}

/// The complete hash computation for one packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct HashTrace {
    /// Kernel function (`inet_ehashfn`, `udp_ehashfn`, `inet6_ehashfn`, `udp6_ehashfn`).
    pub function: String,
    /// Function, file and release of the rule followed.
    pub source: KernelSource,
    /// The formula, written out.
    pub formula: String,
    /// The local address fed to the hash.
    pub laddr: String,
    /// Why that local address (the destination, or 0 for a wildcard pass).
    pub laddr_reason: LaddrReason,
    /// The jhash calls, innermost first.
    pub calls: Vec<JhashCall>,
    /// `lport` when it is added outside the jhash (TCP from 6.15).
    pub lport_added: Option<u16>,
    /// The final hash.
    pub hash: u32,
    /// The final hash, hex.
    pub hash_hex: String,
}

/// Formats a 32-bit value as the 8-digit hex the traces use.
pub fn hex(v: u32) -> String {
    format!("{v:08x}")
}

/// IPv4 hash, fast path (no trace): the forms of [`V4Form`].
#[inline(always)]
pub fn hash_v4(
    form: V4Form,
    jh: JhashForm,
    laddr: u32,
    faddr: u32,
    lport: u16,
    sport: u16,
    initval: u32,
) -> u32 {
    match form {
        V4Form::Classic => jhash_3words(
            jh,
            laddr,
            faddr,
            (lport as u32) << 16 | port_raw(sport),
            initval,
        ),
        V4Form::ClassicNumericFport => jhash_3words(
            jh,
            laddr,
            faddr,
            (lport as u32) << 16 | sport as u32,
            initval,
        ),
        V4Form::LportPlus => {
            (lport as u32).wrapping_add(jhash_3words(jh, laddr, faddr, port_raw(sport), initval))
        }
    }
}

/// The foreign-address hash of the IPv6 classic forms (`__ipv6_addr_jhash`).
fn v6_fhash(form: V6Form, jh: JhashForm, f: [u32; 4], inner: u32) -> u32 {
    match form {
        V6Form::ClassicXorFold => jhash_3words(jh, f[0] ^ f[1], f[2], f[3], inner),
        _ => jhash2(&f, inner),
    }
}

/// The 7.2 single-pass `inet6_ehashfn` body (kernel-history.md §2.3,
/// `net/ipv6/inet6_hashtables.c` 7.2.13), before `lport` is added.
fn v6_single_pass(l: [u32; 4], f: [u32; 4], fport_raw: u32, inner: u32, mix_value: u32) -> u32 {
    let (mut a, mut b, mut c) = (inner, inner, inner);
    a = a.wrapping_add(l[0] ^ mix_value);
    b = b.wrapping_add(l[1]);
    c = c.wrapping_add(l[2]);
    (a, b, c) = mix(a, b, c);
    a = a.wrapping_add(l[3]);
    b = b.wrapping_add(f[0]);
    c = c.wrapping_add(f[1]);
    (a, b, c) = mix(a, b, c);
    a = a.wrapping_add(f[2]);
    b = b.wrapping_add(f[3]);
    c = c.wrapping_add(fport_raw);
    final_c(a, b, c)
}

/// IPv6 hash, fast path (no trace).
pub fn hash_v6(
    form: V6Form,
    jh: JhashForm,
    laddr: [u32; 4],
    faddr: [u32; 4],
    lport: u16,
    sport: u16,
    keys: &Keys,
) -> u32 {
    match form {
        V6Form::SinglePass => (lport as u32).wrapping_add(v6_single_pass(
            laddr,
            faddr,
            port_raw(sport),
            keys.v6_inner,
            keys.v6_outer,
        )),
        V6Form::LportPlusJhash2 => {
            let fh = v6_fhash(form, jh, faddr, keys.v6_inner);
            (lport as u32).wrapping_add(jhash_3words(
                jh,
                laddr[3],
                fh,
                port_raw(sport),
                keys.v6_outer,
            ))
        }
        V6Form::ClassicXorFold | V6Form::ClassicJhash2 => {
            let fh = v6_fhash(form, jh, faddr, keys.v6_inner);
            jhash_3words(
                jh,
                laddr[3],
                fh,
                (lport as u32) << 16 | port_raw(sport),
                keys.v6_outer,
            )
        }
    }
}

/// The reuseport hash of a packet for this protocol in this profile, with
/// `laddr` as the local address the lookup pass hashes; `None` when the
/// addresses are of different families.
#[allow(clippy::too_many_arguments)]
pub fn reuseport_hash(
    p: &Profile,
    proto: Proto,
    laddr: IpAddr,
    lport: u16,
    faddr: IpAddr,
    sport: u16,
    keys: &Keys,
) -> Option<u32> {
    match (laddr, faddr) {
        (IpAddr::V4(l), IpAddr::V4(f)) => {
            let form = if proto == Proto::Tcp { p.tcp4 } else { p.udp4 };
            Some(hash_v4(
                form,
                p.jhash,
                v4_word(l),
                v4_word(f),
                lport,
                sport,
                keys.v4,
            ))
        }
        (IpAddr::V6(l), IpAddr::V6(f)) => {
            let form = if proto == Proto::Tcp { p.tcp6 } else { p.udp6 };
            Some(hash_v6(
                form,
                p.jhash,
                v6_words(l),
                v6_words(f),
                lport,
                sport,
                keys,
            ))
        }
        _ => None,
    }
}

fn call(function: &str, role: JhashRole, words: &[u32], initval: u32, result: u32) -> JhashCall {
    JhashCall {
        function: function.into(),
        role,
        words: words.iter().map(|w| hex(*w)).collect(),
        initval: hex(initval),
        result: hex(result),
    }
}

/// The kernel function and file that compute the hash for this protocol and
/// family in this profile.
fn function_and_source(p: &Profile, proto: Proto, v6: bool) -> (&'static str, &'static str) {
    let shared_inline = !p.per_proto_ehashfn;
    match (proto, v6) {
        (Proto::Tcp, false) if shared_inline => ("inet_ehashfn", "include/net/inet_sock.h"),
        (Proto::Tcp, false) => ("inet_ehashfn", "net/ipv4/inet_hashtables.c"),
        (Proto::Udp, false) if shared_inline => (
            "inet_ehashfn (called from net/ipv4/udp.c with htons(sport))",
            "include/net/inet_sock.h",
        ),
        (Proto::Udp, false) => ("udp_ehashfn", "net/ipv4/udp.c"),
        (Proto::Tcp, true) if shared_inline => ("inet6_ehashfn", "include/net/inet6_hashtables.h"),
        (Proto::Tcp, true) => ("inet6_ehashfn", "net/ipv6/inet6_hashtables.c"),
        (Proto::Udp, true) if shared_inline => (
            "inet6_ehashfn (called from net/ipv6/udp.c)",
            "include/net/inet6_hashtables.h",
        ),
        (Proto::Udp, true) => ("udp6_ehashfn", "net/ipv6/udp.c"),
    }
}

/// Computes the reuseport hash of one packet with the full trace.
///
/// `laddr` is the local address the lookup pass hashes; `laddr_reason` says
/// why (see [`crate::ReuseportGroup::hashed_laddr`]).
#[allow(clippy::too_many_arguments)]
pub fn trace(
    p: &Profile,
    proto: Proto,
    laddr: IpAddr,
    laddr_reason: LaddrReason,
    lport: u16,
    faddr: IpAddr,
    sport: u16,
    keys: &Keys,
) -> HashTrace {
    let jh = p.jhash;
    let jname = match jh {
        JhashForm::Old => "jhash_3words (≤ 4.0 body)",
        JhashForm::New => "jhash_3words",
    };
    let (function, file) = function_and_source(p, proto, matches!(faddr, IpAddr::V6(_)));
    let mut calls = Vec::new();
    let (hash, formula, lport_added) = match (laddr, faddr) {
        (IpAddr::V4(l), IpAddr::V4(f)) => {
            let form = match proto {
                Proto::Tcp => p.tcp4,
                Proto::Udp => p.udp4,
            };
            let (lw, fw) = (v4_word(l), v4_word(f));
            let h = hash_v4(form, jh, lw, fw, lport, sport, keys.v4);
            let (third, formula, added) = match form {
                V4Form::Classic => ((lport as u32) << 16 | port_raw(sport), "jhash_3words(laddr, faddr, lport << 16 | fport, initval)", None),
                V4Form::ClassicNumericFport => (
                    (lport as u32) << 16 | sport as u32,
                    "jhash_3words(laddr, faddr, lport << 16 | ntohs(fport), initval): the 3.9–3.12 htons(sport) double swap",
                    None,
                ),
                V4Form::LportPlus => (port_raw(sport), "lport + jhash_3words(laddr, faddr, fport, initval)", Some(lport)),
            };
            let inner = h.wrapping_sub(added.unwrap_or(0) as u32);
            calls.push(call(
                jname,
                JhashRole::WholeHash,
                &[lw, fw, third],
                keys.v4,
                inner,
            ));
            (h, formula.to_string(), added)
        }
        (IpAddr::V6(l), IpAddr::V6(f)) => {
            let form = match proto {
                Proto::Tcp => p.tcp6,
                Proto::Udp => p.udp6,
            };
            let (lw, fw) = (v6_words(l), v6_words(f));
            let h = hash_v6(form, jh, lw, fw, lport, sport, keys);
            match form {
                V6Form::SinglePass => {
                    let mut words = lw.to_vec();
                    words.extend_from_slice(&fw);
                    words.push(port_raw(sport));
                    calls.push(JhashCall {
                        function: "jhash (single pass over 9 words)".into(),
                        role: JhashRole::WholeHashSinglePass {
                            net_hash_mix: hex(keys.v6_outer),
                        },
                        words: words.iter().map(|w| hex(*w)).collect(),
                        initval: hex(keys.v6_inner),
                        result: hex(h.wrapping_sub(lport as u32)),
                    });
                    (h, "lport + jhash over laddr[0..4], faddr[0..4], fport keyed by tcp_ipv6_hash_secret, with net_hash_mix XORed into laddr[0]".to_string(), Some(lport))
                }
                _ => {
                    let fh = v6_fhash(form, jh, fw, keys.v6_inner);
                    if form == V6Form::ClassicXorFold {
                        calls.push(call(
                            jname,
                            JhashRole::ForeignAddressXorFolded,
                            &[fw[0] ^ fw[1], fw[2], fw[3]],
                            keys.v6_inner,
                            fh,
                        ));
                    } else {
                        calls.push(call(
                            "jhash2",
                            JhashRole::ForeignAddressJhash2,
                            &fw,
                            keys.v6_inner,
                            fh,
                        ));
                    }
                    let (third, added, formula) = if form == V6Form::LportPlusJhash2 {
                        (
                            port_raw(sport),
                            Some(lport),
                            "lport + jhash_3words(laddr[3], fhash, fport, outer)",
                        )
                    } else {
                        (
                            (lport as u32) << 16 | port_raw(sport),
                            None,
                            "jhash_3words(laddr[3], fhash, lport << 16 | fport, outer)",
                        )
                    };
                    calls.push(call(
                        jname,
                        JhashRole::WholeHashV6,
                        &[lw[3], fh, third],
                        keys.v6_outer,
                        h.wrapping_sub(added.unwrap_or(0) as u32),
                    ));
                    (h, formula.to_string(), added)
                }
            }
        }
        _ => unreachable!("the group checks families before hashing"),
    };
    HashTrace {
        function: function.to_string(),
        source: KernelSource::new(function, file, p.release),
        formula,
        laddr: laddr.to_string(),
        laddr_reason,
        calls,
        lport_added,
        hash,
        hash_hex: hex(hash),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jhash::reciprocal_scale;
    use crate::profile::Profile;

    fn v4(s: &str) -> u32 {
        v4_word(s.parse().unwrap())
    }

    // kernel-history.md §1.5: IPv4 TCP, 127.0.0.1:8080 <- 127.0.0.9:40000,
    // secret 0x12345678 + mix 0x9abcdef0.
    #[test]
    fn ipv4_tcp_reference_values_both_forms() {
        let iv = 0x1234_5678u32.wrapping_add(0x9abc_def0);
        let (l, f) = (v4("127.0.0.1"), v4("127.0.0.9"));
        let classic = hash_v4(V4Form::Classic, JhashForm::New, l, f, 8080, 40000, iv);
        let plus = hash_v4(V4Form::LportPlus, JhashForm::New, l, f, 8080, 40000, iv);
        assert_eq!((classic, reciprocal_scale(classic, 8)), (0x8c07_df78, 4));
        assert_eq!((plus, reciprocal_scale(plus, 8)), (0xc3b5_45b8, 6));
        let classic0 = hash_v4(V4Form::Classic, JhashForm::New, l, f, 8080, 40000, 0);
        let plus0 = hash_v4(V4Form::LportPlus, JhashForm::New, l, f, 8080, 40000, 0);
        assert_eq!((classic0, reciprocal_scale(classic0, 8)), (0x1c1d_ac00, 0));
        assert_eq!((plus0, reciprocal_scale(plus0, 8)), (0x4951_8ad8, 2));
    }

    // kernel-history.md §1.5: IPv6 TCP, [::1]:8080 <- [fd02::5]:40000, outer
    // secret 0x11111111, inner 0x22222222, mix 0x33333333.
    #[test]
    fn ipv6_tcp_reference_values_per_era() {
        let l = v6_words("::1".parse().unwrap());
        let f = v6_words("fd02::5".parse().unwrap());
        let classic = Keys {
            v4: 0,
            v6_outer: 0x1111_1111u32.wrapping_add(0x3333_3333),
            v6_inner: 0x2222_2222,
        };
        let single = Keys {
            v4: 0,
            v6_outer: 0x3333_3333,
            v6_inner: 0x2222_2222,
        };
        let cases = [
            (V6Form::ClassicXorFold, classic, 0x7d8e_b89f, 3),
            (V6Form::ClassicJhash2, classic, 0x4e51_033c, 2),
            (V6Form::LportPlusJhash2, classic, 0x9a69_7395, 4),
            (V6Form::SinglePass, single, 0x1ab3_71b2, 0),
        ];
        for (form, keys, want, idx) in cases {
            let h = hash_v6(form, JhashForm::New, l, f, 8080, 40000, &keys);
            assert_eq!((h, reciprocal_scale(h, 8)), (want, idx), "{form:?}");
        }
    }

    #[test]
    fn trace_words_are_what_the_fast_path_hashes() {
        let p = Profile::named("6.12").unwrap();
        let keys = Keys {
            v4: 0xabcd_ef01,
            ..Keys::default()
        };
        let t = trace(
            p,
            Proto::Tcp,
            "127.0.0.1".parse().unwrap(),
            LaddrReason::WildcardDaddr,
            8080,
            "127.0.0.9".parse().unwrap(),
            40000,
            &keys,
        );
        assert_eq!(t.calls[0].words, vec!["0100007f", "0900007f", "1f90409c"]);
        assert_eq!(t.calls[0].result, t.hash_hex);
        assert_eq!(t.lport_added, None);
    }

    #[test]
    fn udp_before_3_13_hashes_the_numeric_source_port() {
        let p = Profile::named("3.9").unwrap();
        let t = trace(
            p,
            Proto::Udp,
            "127.0.0.1".parse().unwrap(),
            LaddrReason::WildcardDaddr,
            8080,
            "127.0.0.9".parse().unwrap(),
            40000,
            &Keys::default(),
        );
        assert_eq!(t.calls[0].words[2], "1f909c40");
    }
}
