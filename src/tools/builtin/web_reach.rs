//! The HTTP client the web tools send with: it connects only to public addresses and to the
//! agent's `private_hosts` (see `crate::policy::private_hosts`). Names are judged by the
//! resolver, on the addresses it hands to the connection, so a redirect to an internal name
//! or a name that resolves differently at connection time is caught; addresses written in a
//! URL never reach a resolver, so the first URL and every redirect are judged here too.

use crate::policy::private_hosts::{HostPattern, host_refusal, name_refusal};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Client, Url, redirect};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::Arc;
use tokio::sync::Semaphore;

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
            let found = lookup(host.to_string()).await?;
            let addresses: Vec<IpAddr> = found.iter().map(SocketAddr::ip).collect();
            if let Some(refusal) = name_refusal(&allowed, host, &addresses, &agent, &is_own) {
                return Err(refusal.into());
            }
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

/// Name lookups on threads at once. `getaddrinfo` holds its thread until the name server
/// answers or its own timeouts pass (ten seconds and more for a server that never answers),
/// and a tool's timeout cannot take it back. So lookups run on threads of their own, never the
/// runtime's blocking pool, whose eight threads the store's calls step aside onto: a stuck
/// lookup costs one idle thread for those seconds. Past this many at once (26 turns of ten
/// parallel calls, each stuck), the next lookup waits for one to end.
const LOOKUP_THREADS: usize = 256;

/// The lookup threads' name, as `ps` and `/proc/<pid>/task/*/comm` show it.
const LOOKUP_THREAD_NAME: &str = "tollgate-lookup";

static LOOKUPS: Semaphore = Semaphore::const_new(LOOKUP_THREADS);

/// `host`'s addresses.
async fn lookup(host: String) -> std::io::Result<Vec<SocketAddr>> {
    bounded(&LOOKUPS, move || {
        (host.as_str(), 0).to_socket_addrs().map(Iterator::collect)
    })
    .await
}

/// Runs `look` on a thread of its own once one of `permits` is free, holding it until `look`
/// returns, even if the caller stopped waiting.
async fn bounded<T: Send + 'static>(
    permits: &'static Semaphore,
    look: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let permit = permits.acquire().await.map_err(std::io::Error::other)?;
    let (found, answer) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(LOOKUP_THREAD_NAME.into())
        .spawn(move || {
            let _held = permit;
            // The caller may have stopped waiting: nobody to tell then.
            let _ = found.send(look());
        })?;
    answer.await.map_err(std::io::Error::other)?
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
    use super::{LOOKUP_THREAD_NAME, Semaphore, bounded, is_own, lookup};
    use futures_util::FutureExt;

    /// A lookup holds its permit for as long as its thread is busy, even once the tool stopped
    /// waiting for it (its timeout, `/stop`): stuck lookups take at most the permits' threads,
    /// and the next one waits, holding none, until one returns.
    #[tokio::test]
    async fn stuck_lookups_hold_no_more_threads_than_their_permits() {
        static PERMITS: Semaphore = Semaphore::const_new(2);
        let (started, mut starts) = tokio::sync::mpsc::unbounded_channel();
        let mut releases = Vec::new();
        for n in 0..2 {
            let (release, held) = std::sync::mpsc::channel::<()>();
            releases.push(release);
            let started = started.clone();
            let waiting = tokio::spawn(bounded(&PERMITS, move || {
                started
                    .send(std::thread::current().name().map(str::to_string))
                    .unwrap();
                held.recv().map_err(std::io::Error::other)
            }));
            // A thread of its own, not one of the runtime's blocking pool.
            let thread = starts.recv().await.unwrap();
            assert_eq!(thread.as_deref(), Some(LOOKUP_THREAD_NAME), "lookup {n}");
            // The tool stops waiting; the lookup's thread goes on.
            waiting.abort();
            let _ = waiting.await;
        }
        assert_eq!(PERMITS.available_permits(), 0, "held by the stuck threads");
        let mut third = Box::pin(bounded(&PERMITS, move || {
            started.send(Some("third".into())).unwrap();
            Ok(())
        }));
        assert!((&mut third).now_or_never().is_none());
        // One stuck lookup returns: its permit goes to the waiting one.
        releases.remove(0).send(()).unwrap();
        third.await.unwrap();
        assert_eq!(starts.recv().await, Some(Some("third".into())));
        drop(releases);
    }

    #[tokio::test]
    async fn a_name_is_looked_up_through_the_bounded_path() {
        let found = lookup("localhost".into()).await.unwrap();
        assert!(found.iter().any(|a| a.ip().is_loopback()), "{found:?}");
    }

    /// The probe answers yes for an address on this machine's interfaces and no for one
    /// elsewhere (192.0.2.1 is a documentation address, on no machine).
    #[test]
    fn the_machines_own_addresses_are_told_apart() {
        assert!(is_own("127.0.0.1".parse().unwrap()));
        assert!(!is_own("192.0.2.1".parse().unwrap()));
        assert!(!is_own("8.8.8.8".parse().unwrap()));
    }
}
