//! A layout that cannot describe a real host is refused with the field
//! named: an empty or zero-based ephemeral range, a socket closed
//! twice.

use reuseport_model::lookup::{Ephemeral, Family, Layout, SockState, SocketSpec};
use reuseport_model::profile::PROFILES;
use reuseport_model::{Keys, Proto};

fn two_sockets() -> Layout {
    let s = SocketSpec {
        family: Family::Inet,
        proto: Proto::Tcp,
        addr: "127.0.0.1".parse().unwrap(),
        port: 8080,
        v6only: false,
        reuseaddr: false,
        reuseport: true,
        uid: 0,
        device: None,
        state: SockState::Listen,
        peer: None,
        incoming_cpu: None,
        program: None,
        program_before_bind: false,
    };
    Layout {
        sockets: vec![s.clone(), s],
        listen_order: None,
        sk_lookup: None,
        keys: Keys::default(),
        ephemeral: None,
        closed: Vec::new(),
    }
}

fn error_of(l: &Layout) -> String {
    let p = PROFILES.last().unwrap();
    match replay_layout(p, l) {
        Ok(_) => panic!("the layout was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn an_ephemeral_range_with_low_above_high_is_refused_naming_both_fields() {
    let mut l = two_sockets();
    l.ephemeral = Some(Ephemeral {
        low: 40000,
        high: 30000,
        autobind_reuse: false,
    });
    let e = error_of(&l);
    assert!(e.starts_with("ephemeral:"), "{e}");
    assert!(
        e.contains("low (40000)") && e.contains("high (30000)"),
        "{e}"
    );
}

#[test]
fn an_ephemeral_range_from_port_0_is_refused() {
    let mut l = two_sockets();
    l.ephemeral = Some(Ephemeral {
        low: 0,
        high: 10,
        autobind_reuse: false,
    });
    let e = error_of(&l);
    assert!(e.starts_with("ephemeral:") && e.contains("low is 0"), "{e}");
}

#[test]
fn a_one_port_range_is_accepted() {
    let mut l = two_sockets();
    l.ephemeral = Some(Ephemeral {
        low: 30000,
        high: 30000,
        autobind_reuse: false,
    });
    assert!(replay_layout(PROFILES.last().unwrap(), &l).is_ok());
}

#[test]
fn a_socket_closed_twice_is_refused_naming_closed_and_the_socket() {
    let mut l = two_sockets();
    l.closed = vec![1, 0, 1];
    let e = error_of(&l);
    assert!(
        e.starts_with("closed:") && e.contains("socket 1 twice"),
        "{e}"
    );
    l.closed = vec![1, 0];
    assert!(replay_layout(PROFILES.last().unwrap(), &l).is_ok());
}

/// The host a socket-list layout stands for: its calls, replayed (the
/// reader's conversion, then the one replay).
fn replay_layout(
    p: &'static reuseport_model::Profile,
    l: &reuseport_model::lookup::Layout,
) -> Result<reuseport_model::lookup::Host, reuseport_model::lookup::LayoutError> {
    reuseport_model::lookup::Host::run(p, &reuseport_model::lookup::CallLog::from_layout(l)?)
}
