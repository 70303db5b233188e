//! The control socket. The store is locked by the process that opened it, so while `tollgate
//! serve` runs no other process can open it; `audit`, `allowlist` and `explain` then send
//! their arguments over a Unix socket beside the store (`<store>.sock`, mode 0600: whoever may
//! write there could change the allowlists) and the serving process runs them against its
//! open store.

use super::{Cli, Command, Io, load_config, run_store_command};
use crate::config::Config;
use crate::store::Store;
use clap::Parser;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Requests larger than this are refused (arguments are small).
const MAX_REQUEST: u64 = 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct Request {
    argv: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct Response {
    code: u8,
    out: String,
    err: String,
}

/// Where the socket of the store at `config.store.path` lives.
#[must_use]
pub fn socket_path(config: &Config) -> PathBuf {
    let mut name = config.store.path.as_os_str().to_owned();
    name.push(".sock");
    PathBuf::from(name)
}

/// The listening socket; removed when dropped.
pub struct Control {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Control {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Listens for commands, running them against `store`; `allowlists_changed` is notified after
/// an `allowlist` command, so live sessions reread what it changed.
pub fn listen(
    config: &Config,
    store: Arc<dyn Store>,
    allowlists_changed: Arc<tokio::sync::Notify>,
) -> std::io::Result<Control> {
    let path = socket_path(config);
    // A socket left by a killed process: nobody listens on it (the store's lock says we are alone).
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    let config_path = config.source.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                continue;
            };
            // Checked at once, before the client can choose when: its process id is only
            // meaningful while the process that connected still lives.
            let peer = peer_is_ours(&socket);
            let (store, config_path) = (store.clone(), config_path.clone());
            let allowlists_changed = allowlists_changed.clone();
            tokio::spawn(async move {
                let mut bytes = Vec::new();
                if (&mut socket)
                    .take(MAX_REQUEST)
                    .read_to_end(&mut bytes)
                    .await
                    .is_err()
                {
                    return;
                }
                // Read, then answer: a refused client still gets the refusal (closing before
                // its request is read would look to it like no answer at all).
                let response = match serde_json::from_slice::<Request>(&bytes) {
                    _ if let Err(why) = &peer => {
                        tracing::warn!(target: "tollgate::serve", "the control socket refused a peer: {why}");
                        Response {
                            code: 2,
                            out: String::new(),
                            err: format!(
                                "tollgate: the control socket refused this process: {why}\n"
                            ),
                        }
                    }
                    Ok(request) => tokio::task::spawn_blocking(move || {
                        let (response, changes_allowlists) =
                            run_request(config_path.as_deref(), &request.argv, store);
                        if changes_allowlists {
                            allowlists_changed.notify_one();
                        }
                        response
                    })
                    .await
                    .unwrap_or_else(|e| Response {
                        code: 1,
                        out: String::new(),
                        err: format!("tollgate: the command failed in the serving process: {e}\n"),
                    }),
                    Err(e) => Response {
                        code: 2,
                        out: String::new(),
                        err: format!("tollgate: a malformed control request: {e}\n"),
                    },
                };
                let text = serde_json::to_vec(&response).unwrap_or_default();
                let _ = socket.write_all(&text).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Ok(Control { path, task })
}

/// Only a process of this service's own user, in this service's own user namespace, may send
/// commands. The file mode (0600) already keeps other users out; every sandboxed command runs in
/// a user namespace of its own (with our uid mapped in), so this refuses it even if a sandbox
/// layer let it reach the socket. Anything that cannot be checked is refused.
fn peer_is_ours(socket: &tokio::net::UnixStream) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let cred = socket
        .peer_cred()
        .map_err(|e| format!("its credentials could not be read ({e})"))?;
    // SAFETY: getuid has no preconditions.
    let own_uid = unsafe { libc::getuid() };
    if cred.uid() != own_uid {
        return Err(format!("it runs as uid {}, not {own_uid}", cred.uid()));
    }
    let pid = cred
        .pid()
        .filter(|pid| *pid > 0)
        .ok_or("its process id is unknown (it is in another PID namespace)")?;
    let namespace_of = |path: String| {
        std::fs::metadata(&path)
            .map(|m| (m.dev(), m.ino()))
            .map_err(|e| format!("{path}: {e}"))
    };
    let own = namespace_of("/proc/self/ns/user".to_string())?;
    let peer = namespace_of(format!("/proc/{pid}/ns/user"))?;
    if own != peer {
        return Err("it runs in another user namespace (a sandboxed command)".to_string());
    }
    Ok(())
}

/// Runs one forwarded command with the serving process's config and store; true with it when
/// the command may have changed the allowlists.
fn run_request(
    config_path: Option<&Path>,
    argv: &[String],
    store: Arc<dyn Store>,
) -> (Response, bool) {
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let response = Response {
                code: 2,
                out: String::new(),
                err: e.to_string(),
            };
            return (response, false);
        }
    };
    let changes_allowlists = matches!(cli.command, Command::Allowlist(_));
    let mut io = Io {
        out: String::new(),
        store: Some(store),
    };
    let outcome = run_store_command(&cli.command, config_path, &mut io);
    let _ = io.store.as_ref().map(|s| s.flush());
    let response = match outcome {
        Ok(code) => Response {
            code: if code == ExitCode::SUCCESS { 0 } else { 1 },
            out: io.out,
            err: String::new(),
        },
        Err(failure) => Response {
            code: failure.code,
            out: io.out,
            err: format!("tollgate: {}\n", failure.message),
        },
    };
    (response, changes_allowlists)
}

/// When `tollgate serve` holds this config's store, runs the command there and returns its
/// exit code; `None` when nothing serves (the command then opens the store itself).
pub fn forward_if_serving(config_path: Option<&Path>, argv: Vec<OsString>) -> Option<ExitCode> {
    let config = load_config(config_path).ok()?;
    let path = socket_path(&config);
    let mut stream = std::os::unix::net::UnixStream::connect(&path).ok()?;
    let request = Request {
        argv: argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
    };
    let sent = serde_json::to_vec(&request)
        .ok()
        .and_then(|bytes| stream.write_all(&bytes).ok())
        .and_then(|()| stream.shutdown(std::net::Shutdown::Write).ok());
    let mut answer = Vec::new();
    let response = sent
        .and_then(|()| stream.read_to_end(&mut answer).ok())
        .and_then(|_| serde_json::from_slice::<Response>(&answer).ok());
    let Some(response) = response else {
        eprintln!(
            "tollgate: `tollgate serve` holds the store, and its control socket {} did not answer",
            path.display()
        );
        return Some(ExitCode::from(1));
    };
    print!("{}", response.out);
    eprint!("{}", response.err);
    Some(ExitCode::from(response.code))
}
