//! The HTTP client the web tools send with: it connects only to public addresses and to the
//! agent's `private_hosts` (see `crate::policy::private_hosts`). Names are judged by the
//! resolver, on the addresses it hands to the connection, so a redirect to an internal name
//! or a name that resolves differently at connection time is caught; addresses written in a
//! URL never reach a resolver, so the first URL and every redirect are judged here too.

use crate::policy::private_hosts::{HostPattern, host_refusal, name_refusal};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Client, Url, redirect};
use std::net::IpAddr;
use std::net::UdpSocket;
use std::sync::Arc;

/// Redirects followed at most.
const MAX_REDIRECTS: usize = 5;

/// A client for one call of `agent`'s web tools. It ignores the service's proxy variables:
/// through a proxy, the proxy would resolve the names and nothing here could judge them.
pub(super) fn client(allowed: &[HostPattern], agent: &str) -> reqwest::Result<Client> {
    let reach = Arc::new(Reach {
        allowed: allowed.to_vec(),
        agent: agent.to_string(),
    });
    let for_redirects = reach.clone();
    Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .no_proxy()
        .dns_resolver(reach)
        .redirect(redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            match url_refusal(&for_redirects.allowed, &for_redirects.agent, attempt.url()) {
                Some(refusal) => attempt.error(format!("a redirect was refused: {refusal}")),
                None => attempt.follow(),
            }
        }))
        .user_agent("tollgate")
        .build()
}

/// What the agent's web tools may reach.
struct Reach {
    allowed: Vec<HostPattern>,
    agent: String,
}

/// Why the client may not go to `url`, judged before any connection: the scheme, and an
/// address written as the host (a name is the resolver's to judge).
fn url_refusal(allowed: &[HostPattern], agent: &str, url: &Url) -> Option<String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Some(format!("`{url}` is not an http(s) URL"));
    }
    host_refusal(allowed, url.host_str()?, agent, &is_own)
}

impl Resolve for Reach {
    fn resolve(&self, name: Name) -> Resolving {
        let allowed = self.allowed.clone();
        let agent = self.agent.clone();
        Box::pin(async move {
            let host = name.as_str();
            let found: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((host, 0)).await?.collect();
            let addresses: Vec<IpAddr> = found.iter().map(std::net::SocketAddr::ip).collect();
            if let Some(refusal) = name_refusal(&allowed, host, &addresses, &agent, &is_own) {
                return Err(refusal.into());
            }
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

/// Whether `ip` is an address of this machine: only an address on one of its interfaces can
/// be bound (a host configured for non-local binds makes every address count, which fails
/// closed).
fn is_own(ip: IpAddr) -> bool {
    UdpSocket::bind((ip, 0)).is_ok()
}

/// Why the web tools may not send to `url`, checked before sending (parsed as reqwest
/// parses it, so `http://127.1/` is judged as `127.0.0.1`).
pub(super) fn refusal(allowed: &[HostPattern], agent: &str, url: &str) -> Option<String> {
    match Url::parse(url) {
        Ok(parsed) => url_refusal(allowed, agent, &parsed),
        Err(e) => Some(format!("`{url}` is not a valid URL: {e}")),
    }
}

/// An error with every cause it carries: reqwest's own message names only the request, and
/// the reason a connection was refused is in a cause.
pub(super) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let said = inner.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::is_own;

    /// The probe answers yes for an address on this machine's interfaces and no for one
    /// elsewhere (192.0.2.1 is a documentation address, on no machine).
    #[test]
    fn the_machines_own_addresses_are_told_apart() {
        assert!(is_own("127.0.0.1".parse().unwrap()));
        assert!(!is_own("192.0.2.1".parse().unwrap()));
        assert!(!is_own("8.8.8.8".parse().unwrap()));
    }
}
