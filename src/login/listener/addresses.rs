//! Where the login listener listens: the first usable address of those configured, with the
//! same port on the other loopback family for a `localhost` redirect (browsers resolve it to
//! either), and the error that names every address tried when none was usable.

use crate::debug;
use crate::error::{Exit, fail};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};

/// With port 0 and a `localhost` redirect, the free port picked on one family may be taken on
/// the other: pick again this many times before giving up on that address.
const ANY_PORT_ATTEMPTS: usize = 5;

/// Why one configured address could not be used.
pub(super) enum BindProblem {
    /// Someone else listens there (or on its twin in the other family, named here).
    InUse {
        twin: Option<SocketAddr>,
    },
    Other(io::Error),
}

/// Binds `address` and, for a `localhost` redirect, the same port on the other family.
pub(super) fn bind_address(
    address: SocketAddr,
    with_twin: bool,
) -> Result<Vec<TcpListener>, BindProblem> {
    let attempts = if with_twin && address.port() == 0 {
        ANY_PORT_ATTEMPTS
    } else {
        1
    };
    let mut busy_twin = None;
    for _ in 0..attempts {
        let primary = TcpListener::bind(address).map_err(|err| match err.kind() {
            io::ErrorKind::AddrInUse => BindProblem::InUse { twin: None },
            _ => BindProblem::Other(err),
        })?;
        if !with_twin {
            return Ok(vec![primary]);
        }
        let port = primary.local_addr().map_err(BindProblem::Other)?.port();
        let twin = SocketAddr::new(other_loopback_family(address.ip()), port);
        // Binding [::1] needs no IPV6_V6ONLY: that option only matters for the wildcard `::`,
        // and a socket bound to ::1 never receives IPv4 traffic.
        match TcpListener::bind(twin) {
            Ok(twin_socket) => return Ok(vec![primary, twin_socket]),
            Err(err) if err.kind() == io::ErrorKind::AddrInUse => {
                // Someone else would receive the callback of a browser that resolves localhost
                // to the twin family: this port is not ours to use.
                debug!(
                    1,
                    "{twin} is in use, so {address} is not usable for a localhost redirect"
                );
                busy_twin = Some(twin);
            }
            Err(err) => {
                // Typically IPv6 disabled (EADDRNOTAVAIL, EAFNOSUPPORT). Nobody can listen there,
                // and browsers fall back to the family that answers.
                debug!(
                    1,
                    "not listening on {twin} as well ({err}); {address} alone serves localhost"
                );
                return Ok(vec![primary]);
            }
        }
    }
    Err(BindProblem::InUse { twin: busy_twin })
}

fn other_loopback_family(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

/// The error when every configured address failed, naming each of them.
pub(super) fn no_address_left(problems: &[(SocketAddr, BindProblem)]) -> anyhow::Error {
    let any_port = match problems.first() {
        Some((address, _)) => SocketAddr::new(address.ip(), 0),
        None => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
    };
    let all_in_use = problems
        .iter()
        .all(|(_, problem)| matches!(problem, BindProblem::InUse { .. }));
    if all_in_use {
        let names: Vec<String> = problems
            .iter()
            .map(|(address, problem)| match problem {
                BindProblem::InUse { twin: Some(twin) } => {
                    format!("{address} (with {twin}, for localhost)")
                }
                _ => address.to_string(),
            })
            .collect();
        let verb = if names.len() == 1 { "is" } else { "are all" };
        return fail(
            Exit::Login,
            format!(
                "cannot listen for the login callback: {} {verb} in use; close the other program or pass --listen-address {any_port}",
                names.join(", ")
            ),
        );
    }
    let reasons: Vec<String> = problems
        .iter()
        .map(|(address, problem)| match problem {
            BindProblem::InUse { .. } => format!("{address}: in use"),
            BindProblem::Other(err) => format!("{address}: {err}"),
        })
        .collect();
    fail(
        Exit::Login,
        format!(
            "cannot listen for the login callback ({}); pass a --listen-address this machine allows, e.g. {any_port}",
            reasons.join("; ")
        ),
    )
}
