//! What the end-to-end benchmarks share: the minimal LLM bot's one model call, and the
//! figures' arithmetic.

use crate::fakes::llm::{FakeLlm, text};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `tollgate serve` child, with its directory and model; killed when dropped.
pub struct Tollgate {
    /// Held so the directory outlives the process.
    pub _dir: tempfile::TempDir,
    pub child: Child,
    /// Held so the model outlives the process.
    pub _llm: FakeLlm,
    /// The bot token's variable and value, for a restart.
    pub token: (String, String),
}

impl Drop for Tollgate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Bytes on disk under `path` (allocated blocks, as `du` counts them).
pub fn disk_bytes(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&entry.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

impl Tollgate {
    /// Stops the service as an operator would (SIGTERM) and waits for it.
    pub fn stop(&mut self) {
        // SAFETY: kill only sends a signal to our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }

    /// Starts the stopped service again, on the same config and store.
    pub fn restart(&mut self) {
        self.child = spawn_serve(self._dir.path(), (&self.token.0, &self.token.1));
    }

    /// The store's directory.
    pub fn store_path(&self) -> std::path::PathBuf {
        self._dir.path().join("store")
    }

    /// Runs the retention pass on the stopped service's store as if `days` had passed: what
    /// it deleted.
    pub fn prune_as_if_later(&self, days: u64) -> String {
        let config = tollgate::config::load(Some(&self._dir.path().join("tollgate.toml"))).unwrap();
        let store: std::sync::Arc<dyn tollgate::store::Store> =
            std::sync::Arc::new(tollgate::store::open_dir(&config.store.path, 16).unwrap());
        let report = tollgate::retention::prune(
            &store,
            &config,
            tollgate::clock::now_secs() + days * 86_400,
        )
        .unwrap();
        store.flush().unwrap();
        report.to_string()
    }

    /// Time the child's threads have spent on a CPU so far (from each thread's `schedstat`).
    pub fn cpu_time(&self) -> Duration {
        cpu_time_of(self.child.id())
    }

    /// Where the child's resident memory is, from `/proc/<pid>/smaps`: the binary and
    /// libraries (file-backed), the main heap, and anonymous mappings (malloc's other arenas,
    /// large allocations, thread stacks) by size — in KiB.
    pub fn rss_breakdown(&self) -> String {
        let smaps =
            std::fs::read_to_string(format!("/proc/{}/smaps", self.child.id())).unwrap_or_default();
        let (mut files, mut heap, mut big, mut arenas, mut small) = (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut mapping: (String, u64) = (String::new(), 0);
        for line in smaps.lines() {
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or("");
            if first.contains('-') && first.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) {
                let range: Vec<u64> = first
                    .split('-')
                    .map(|h| u64::from_str_radix(h, 16).unwrap_or(0))
                    .collect();
                let size = range.get(1).unwrap_or(&0).saturating_sub(range[0]) / 1024;
                mapping = (words.nth(4).unwrap_or("").to_string(), size);
            } else if first == "Rss:" {
                let rss: u64 = words.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                match mapping.0.as_str() {
                    "[heap]" => heap += rss,
                    "" if mapping.1 >= 60 * 1024 => arenas += rss,
                    "" if mapping.1 >= 1024 => big += rss,
                    "" => small += rss,
                    _ => files += rss,
                }
            }
        }
        format!(
            "files {files} KiB, main heap {heap} KiB, 64 MiB arenas {arenas} KiB, anonymous ≥1 MiB {big} KiB, smaller anonymous {small} KiB"
        )
    }

    /// The child's resident memory, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

/// Prints `MARK <what> <seconds>` on stderr, the time on `CLOCK_MONOTONIC`: where a phase
/// starts and ends in a profile recorded with `perf record -k CLOCK_MONOTONIC`
/// (`benches/perf_windows.py` compares two such windows).
pub fn mark(what: &str) {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the out-parameter it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut time) };
    eprintln!("MARK {what} {}.{:09}", time.tv_sec, time.tv_nsec);
}

/// Time process `pid` has spent on a CPU so far: its process CPU clock, which counts the
/// threads that have exited too (serve lets idle blocking threads go after a second; summing
/// the live threads' `schedstat` dropped theirs, and could even go backwards).
pub fn cpu_time_of(pid: u32) -> Duration {
    let mut clock: libc::clockid_t = 0;
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: both calls only write the out-parameters they are given.
    let read = unsafe {
        libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) == 0
            && libc::clock_gettime(clock, &mut time) == 0
    };
    assert!(read, "no CPU clock for process {pid} (has it exited?)");
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

/// `command`, its child killed if this process dies first (a benchmark stopped by a signal
/// must not leave a bot polling a port a later run may be given).
pub fn dies_with_parent(mut command: Command) -> Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe and touches only the child being started.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    command
}

/// One streamed chat completion: the content deltas joined.
pub async fn ask_model(client: &reqwest::Client, model: &str, text: &str) -> String {
    let body = serde_json::json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": text}]});
    let Ok(mut response) = client
        .post(format!("{model}/chat/completions"))
        .json(&body)
        .send()
        .await
    else {
        return "the model is unreachable".into();
    };
    let (mut content, mut pending) = (String::new(), Vec::new());
    while let Ok(Some(chunk)) = response.chunk().await {
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            if let Some(data) = line.trim().strip_prefix("data:")
                && let Ok(event) = serde_json::from_str::<serde_json::Value>(data.trim())
                && let Some(piece) = event["choices"][0]["delta"]["content"].as_str()
            {
                content.push_str(piece);
            }
        }
    }
    content
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Starts `tollgate serve` answering through a scripted model (`replies` times "ok") with
/// `bridge` (its whole config section) and the token variable `token`; typing and progress
/// off when `quiet` (both floors make no such calls).
pub async fn start_tollgate(
    replies: usize,
    quiet: bool,
    bridge: &str,
    token: (&str, &str),
) -> Tollgate {
    let llm = FakeLlm::start((0..replies).map(|_| text("ok")).collect()).await;
    llm.stop_recording();
    let dir = tempfile::tempdir().unwrap();
    let quiet = if quiet {
        "progress_interval_secs = 0\ntyping = false\n"
    } else {
        ""
    };
    let config = format!(
        "[store]\npath = \"store\"\ncache_capacity_mb = 16\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\n[agents.a]\nprovider = \"p\"\nmodel = \"m\"\nworkspace = \"ws\"\n{bridge}\nallowed_users = [\"*\"]\nadmins = [1]\nrate_limit_per_minute = 1000\n{quiet}\n",
        llm.url
    );
    std::fs::write(dir.path().join("tollgate.toml"), config).unwrap();
    let child = spawn_serve(dir.path(), token);
    Tollgate {
        _dir: dir,
        child,
        _llm: llm,
        token: (token.0.to_string(), token.1.to_string()),
    }
}

/// `tollgate serve` on `dir`'s `tollgate.toml`, with the bot token variable `token`.
fn spawn_serve(dir: &std::path::Path, token: (&str, &str)) -> Child {
    dies_with_parent(Command::new(env!("CARGO_BIN_EXE_tollgate")))
        .args(["serve", "--config", "tollgate.toml"])
        .current_dir(dir)
        .env_remove("TELEGRAM_BOT_TOKEN")
        .env_remove("DISCORD_TOKEN")
        .env(token.0, token.1)
        .envs(
            std::env::var("BENCH_CHILD_MALLOC")
                .ok()
                .map(|v| ("MALLOC_ARENA_MAX", v)),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}
