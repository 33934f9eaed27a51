//! QUIC datagrams as a reuseport program sees them, and the program that
//! steers them by connection ID.
//!
//! A group program reads the UDP payload from its first byte. For QUIC
//! that is the first byte of a packet header (RFC 9000 §17): the header
//! form bit (0x80) tells a long header (Initial, 0-RTT, Handshake, Retry)
//! from a short one (1-RTT). A long header carries the version, then the
//! Destination Connection ID with its length byte (offset 5), then the
//! Source Connection ID. A short header carries the Destination Connection
//! ID right after its first byte, with no length: the server knows the
//! length of the IDs it issued.
//!
//! nginx's QUIC helper (`ngx_quic_reuseport_helper.c`, an SK_REUSEPORT
//! program) reads the first 8 bytes of the Destination Connection ID of
//! every packet whose ID is long enough, looks them up in a SOCKHASH that
//! maps each worker's key (its socket cookie, which nginx writes into the
//! IDs it issues) to the worker's socket, and on a miss returns SK_PASS, so
//! the group's hash decides. A classic program has no map; [`CID_PROGRAM`]
//! keeps the same logic with the socket's index in `socks[]` written into
//! the first byte of the IDs the server issues, and returns an index past
//! the group (which falls back to the hash from 4.16) where nginx's lookup
//! misses. What that changes is said on the pages: an index is a position,
//! and a position changes when a member closes.
//!
//! The packets built here are headers followed by a 16-byte stand-in for
//! the protected payload (the length of an AEAD tag): no program of this
//! kind reads past the connection IDs.

pub mod reload;

use thiserror::Error;

/// The longest connection ID QUIC version 1 allows (RFC 9000 §17.2).
pub const MAX_CID: usize = 20;

/// The length of the connection IDs nginx issues (`NGX_QUIC_SERVER_CID_LEN`).
pub const NGINX_CID_LEN: usize = 20;

/// Bytes of the stand-in for the protected payload after each header.
pub const PAYLOAD_STANDIN: usize = 16;

/// QUIC version 1 (RFC 9000).
pub const VERSION_1: u32 = 0x0000_0001;

/// Which packet: the three a client sends over a connection's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum QuicForm {
    /// Long header, type Initial (0x0): the client's first packet; its
    /// Destination Connection ID is the client's own random choice.
    Initial,
    /// Long header, type Handshake (0x2): the Destination Connection ID is
    /// one the server issued.
    Handshake,
    /// Short header (1-RTT): the Destination Connection ID is one the
    /// server issued.
    Short,
}

/// One packet to build.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct QuicPacketSpec {
    /// Which packet.
    pub form: QuicForm,
    /// The Destination Connection ID (0 to 20 bytes).
    pub dcid: Vec<u8>,
    /// The Source Connection ID of a long header (0 to 20 bytes; a short
    /// header has none and this is ignored).
    #[serde(default)]
    pub scid: Vec<u8>,
    /// The packet number, written in 4 bytes.
    #[serde(default)]
    pub packet_number: u32,
}

/// A packet that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QuicError {
    /// A connection ID longer than version 1 allows.
    #[error("the {which} connection ID has {len} bytes; QUIC version 1 allows at most 20 (RFC 9000 §17.2)")]
    CidTooLong {
        /// `destination` or `source`.
        which: &'static str,
        /// Its length.
        len: usize,
    },
}

/// The bytes of one packet: its header (first byte with the fixed bit 0x40
/// and a 4-byte packet number), then [`PAYLOAD_STANDIN`] zero bytes.
pub fn packet(spec: &QuicPacketSpec) -> Result<Vec<u8>, QuicError> {
    for (which, cid) in [("destination", &spec.dcid), ("source", &spec.scid)] {
        if cid.len() > MAX_CID {
            return Err(QuicError::CidTooLong {
                which,
                len: cid.len(),
            });
        }
    }
    // Packet number length 4: the two low bits of the first byte say 3.
    const PN_LEN_BITS: u8 = 0x03;
    let pn = spec.packet_number.to_be_bytes();
    let mut out = Vec::with_capacity(64);
    match spec.form {
        QuicForm::Short => {
            out.push(0x40 | PN_LEN_BITS);
            out.extend_from_slice(&spec.dcid);
        }
        QuicForm::Initial | QuicForm::Handshake => {
            let kind: u8 = if spec.form == QuicForm::Initial {
                0x0
            } else {
                0x2
            };
            out.push(0x80 | 0x40 | (kind << 4) | PN_LEN_BITS);
            out.extend_from_slice(&VERSION_1.to_be_bytes());
            out.push(spec.dcid.len() as u8);
            out.extend_from_slice(&spec.dcid);
            out.push(spec.scid.len() as u8);
            out.extend_from_slice(&spec.scid);
            if spec.form == QuicForm::Initial {
                // Token length 0 (a variable-length integer of one byte).
                out.push(0);
            }
            // Length: packet number and payload, as a 2-byte variable-length integer.
            let len = (pn.len() + PAYLOAD_STANDIN) as u16;
            out.extend_from_slice(&(0x4000 | len).to_be_bytes());
        }
    }
    out.extend_from_slice(&pn);
    out.extend_from_slice(&[0; PAYLOAD_STANDIN]);
    Ok(out)
}

/// The connection-ID program in `bpf_asm` text: nginx's helper logic for a
/// classic program (see the module documentation). A short header's
/// Destination Connection ID starts at byte 1; a Handshake packet's at
/// byte 6, after its length at byte 5. Initial and 0-RTT packets carry the
/// client's own ID, which names no worker, and IDs shorter than 8 bytes are
/// not read (nginx: "useless to search for key in such short DCID"): both
/// return an index past the group, so the hash decides.
pub const CID_PROGRAM: &str = "\
; Steer QUIC packets by the worker named in the connection ID (nginx's helper logic).
; The server writes its socket's socks[] index into the first byte of every ID it issues.
        ldb [0]                ; first byte of the QUIC header
        jset #0x80, long, short
short:  ldb [1]                ; 1-RTT: the Destination Connection ID starts at byte 1
        ret a
long:   and #0x30              ; long header: the packet type
        jeq #0x20, hs, pass    ; only Handshake packets carry an ID the server issued
hs:     ldb [5]                ; the ID's length
        jlt #8, pass
        ldb [6]                ; its first byte
        ret a
pass:   ret #0xffffffff        ; past the group: the hash decides (4.16+)
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reuseport::cbpf;

    fn spec(form: QuicForm, dcid: &[u8]) -> QuicPacketSpec {
        QuicPacketSpec {
            form,
            dcid: dcid.to_vec(),
            scid: vec![0xaa; 8],
            packet_number: 7,
        }
    }

    /// RFC 9000 §17.2 and §17.3 byte by byte, counted by hand: a reader's
    /// program depends on these offsets.
    #[test]
    fn headers_put_the_connection_ids_where_rfc_9000_says() {
        let i = packet(&spec(QuicForm::Initial, &[1, 2, 3, 4, 5, 6, 7, 8])).unwrap();
        assert_eq!(
            i[0], 0xc3,
            "Initial: long form, fixed bit, type 0, 4-byte packet number"
        );
        assert_eq!(&i[1..5], &[0, 0, 0, 1], "version 1");
        assert_eq!(i[5], 8, "DCID length");
        assert_eq!(&i[6..14], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(i[14], 8, "SCID length");
        assert_eq!(i[23], 0, "token length");
        assert_eq!(&i[24..26], &[0x40, 20], "length: 4 + 16 as a 2-byte varint");
        assert_eq!(&i[26..30], &[0, 0, 0, 7], "packet number");
        assert_eq!(i.len(), 30 + 16);
        let h = packet(&spec(QuicForm::Handshake, &[9; 20])).unwrap();
        assert_eq!(h[0], 0xe3, "Handshake: type 2");
        assert_eq!(h[5], 20);
        assert_eq!(h.len(), 1 + 4 + 1 + 20 + 1 + 8 + 2 + 4 + 16);
        let s = packet(&spec(QuicForm::Short, &[3; 20])).unwrap();
        assert_eq!(s[0], 0x43, "short: fixed bit only");
        assert_eq!(&s[1..21], &[3; 20]);
        assert_eq!(s.len(), 1 + 20 + 4 + 16);
        assert!(packet(&spec(QuicForm::Short, &[0; 21])).is_err());
    }

    /// The program returns the ID's first byte for the packets that carry
    /// a server-issued ID of 8 bytes or more, and an index past any group
    /// for the others: the cases of nginx's helper, read one by one.
    #[test]
    fn the_cid_program_reads_the_worker_from_server_issued_ids_only() {
        let insns = cbpf::parse(CID_PROGRAM).unwrap();
        cbpf::check(&insns).unwrap();
        let ret = |bytes: &[u8]| {
            let input = cbpf::Input {
                payload: bytes,
                proto: crate::tuple::Proto::Udp,
                ipv6: false,
                cpu: 0,
                anc: &Default::default(),
            };
            cbpf::run(&insns, &input).value()
        };
        let mut cid = [0x5au8; 20];
        cid[0] = 3;
        assert_eq!(ret(&packet(&spec(QuicForm::Short, &cid)).unwrap()), Some(3));
        assert_eq!(
            ret(&packet(&spec(QuicForm::Handshake, &cid[..8])).unwrap()),
            Some(3)
        );
        assert_eq!(
            ret(&packet(&spec(QuicForm::Handshake, &cid[..7])).unwrap()),
            Some(u32::MAX)
        );
        assert_eq!(
            ret(&packet(&spec(QuicForm::Initial, &cid)).unwrap()),
            Some(u32::MAX)
        );
        // A datagram of nothing: the first load runs past the end, and the program returns 0.
        assert_eq!(ret(&[]), Some(0));
    }
}
