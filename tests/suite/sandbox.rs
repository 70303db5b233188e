//! Containment, proven on this kernel (Landlock and unprivileged user namespaces): approved
//! commands still cannot write outside the sandbox, reach the network without
//! `network_access`, read the service's secrets, or outlive their timeout.

use std::collections::{BTreeMap, BTreeSet};
use std::future::pending;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tollgate::policy::env::child_environment;
use tollgate::policy::mode::SandboxPolicy;
use tollgate::sandbox::{OUTPUT_CAP, RunOutcome, SandboxSpec, ShellRunner};

pub fn runner() -> ShellRunner {
    ShellRunner::new(PathBuf::from(env!("CARGO_BIN_EXE_tollgate")))
}

pub struct Place {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

pub fn place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    let root = tollgate::policy::paths::canonical_root(dir.path());
    std::fs::create_dir_all(root.join("ws")).unwrap();
    std::fs::create_dir_all(root.join("outside")).unwrap();
    std::fs::write(root.join("outside/private.txt"), "not for the agent").unwrap();
    Place { _dir: dir, root }
}

pub fn spec(place: &Place, sandbox: SandboxPolicy, network: bool) -> SandboxSpec {
    SandboxSpec {
        sandbox,
        workspace: place.root.join("ws"),
        writable_roots: vec![],
        readable_roots: vec![],
        tmpdir: PathBuf::new(),
        setup_errors: PathBuf::new(),
        network,
        shell: PathBuf::new(),
        trust_git_config: false,
    }
}

pub fn env(place: &Place) -> BTreeMap<String, String> {
    child_environment(
        std::env::vars(),
        &BTreeSet::new(),
        &[],
        &place.root.join("ws"),
        Path::new("/tmp"),
        &tollgate::policy::env::shell_path(&[]),
    )
}

pub async fn run(
    place: &Place,
    sandbox: SandboxPolicy,
    network: bool,
    command: &str,
) -> RunOutcome {
    runner()
        .run(
            command,
            &spec(place, sandbox, network),
            &env(place),
            Duration::from_secs(20),
            pending(),
        )
        .await
        .unwrap()
}

pub fn text(outcome: &RunOutcome) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        outcome.exit_code,
        outcome.stdout.text(),
        outcome.stderr.text()
    )
}

#[tokio::test]
async fn writes_stay_in_the_workspace() {
    let p = place();
    let ws = SandboxPolicy::WorkspaceWrite;
    let ok = run(
        &p,
        ws,
        false,
        "echo hi > made.txt && cat made.txt && touch \"$TMPDIR/t\"",
    )
    .await;
    assert_eq!(ok.exit_code, Some(0), "{}", text(&ok));
    assert_eq!(ok.stdout.text(), "hi\n");
    assert!(p.root.join("ws/made.txt").exists());

    let etc = run(&p, ws, false, "touch /etc/tollgate-escape").await;
    assert_ne!(etc.exit_code, Some(0), "{}", text(&etc));
    assert!(!Path::new("/etc/tollgate-escape").exists());

    let real_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let target = format!("{real_home}/tollgate-escape-test");
    let home = run(&p, ws, false, &format!("touch '{target}'")).await;
    assert_ne!(home.exit_code, Some(0), "{}", text(&home));
    assert!(!Path::new(&target).exists());

    let outside = run(
        &p,
        ws,
        false,
        &format!("cat '{}'", p.root.join("outside/private.txt").display()),
    )
    .await;
    assert_ne!(outside.exit_code, Some(0), "{}", text(&outside));
    assert!(!outside.stdout.text().contains("not for the agent"));

    let shadow = run(&p, ws, false, "cat /etc/shadow").await;
    assert_ne!(shadow.exit_code, Some(0), "{}", text(&shadow));
}

/// A command leaves the service's terminal behind: it leads a session of its own (so it
/// cannot type into the operator's console with `TIOCSTI`, read its keys or draw on it), and
/// `/dev/tty` is outside the sandbox.
#[tokio::test]
async fn a_command_has_no_terminal_of_the_service() {
    let p = place();
    let out = run(
        &p,
        SandboxPolicy::WorkspaceWrite,
        false,
        "cut -d' ' -f6 /proc/self/stat; : > /dev/tty",
    )
    .await;
    assert_eq!(
        out.stdout.text().trim(),
        "1",
        "its own session: {}",
        text(&out)
    );
    assert!(
        out.stderr.text().contains("Permission denied"),
        "{}",
        text(&out)
    );
}

/// Config files under HOME (the workspace, which the agent writes) that name programs are not
/// read: kubectl's credential plugins, go's GOFLAGS.
#[tokio::test]
async fn tools_do_not_read_program_naming_config_from_the_workspace() {
    let p = place();
    let out = run(
        &p,
        SandboxPolicy::WorkspaceWrite,
        false,
        "echo \"$KUBECONFIG $GOENV\"",
    )
    .await;
    assert_eq!(out.stdout.text().trim(), "/dev/null off", "{}", text(&out));
    // `less` reading a planted lesskey file: its `#env` section names a program to run on
    // every file shown.
    let planted = run(
        &p,
        SandboxPolicy::WorkspaceWrite,
        false,
        "mkdir -p .config && printf '#env\\nLESSOPEN=|touch ran-lessopen %%s\\n' \
         | tee .config/lesskey > .lesskey && echo hi > f && less f && ls",
    )
    .await;
    assert!(planted.stdout.text().contains("hi"), "{}", text(&planted));
    assert!(
        !p.root.join("ws/ran-lessopen").exists(),
        "{}",
        text(&planted)
    );
}

#[tokio::test]
async fn read_only_writes_only_its_temp_dir() {
    let p = place();
    let ro = SandboxPolicy::ReadOnly;
    let denied = run(&p, ro, false, "touch in-workspace.txt").await;
    assert_ne!(denied.exit_code, Some(0), "{}", text(&denied));
    assert!(!p.root.join("ws/in-workspace.txt").exists());
    let tmp = run(
        &p,
        ro,
        false,
        "echo x > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\" && ls /usr/bin >/dev/null",
    )
    .await;
    assert_eq!(tmp.exit_code, Some(0), "{}", text(&tmp));
}

#[tokio::test]
async fn network_only_with_network_access() {
    let p = place();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let _ = socket
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
                )
                .await;
        }
    });
    let curl = format!("curl -s --max-time 5 http://127.0.0.1:{port}/");
    let off = run(&p, SandboxPolicy::WorkspaceWrite, false, &curl).await;
    assert_ne!(off.exit_code, Some(0), "{}", text(&off));
    assert!(!off.stdout.text().contains("hello"));
    let on = run(&p, SandboxPolicy::WorkspaceWrite, true, &curl).await;
    assert_eq!(on.exit_code, Some(0), "{}", text(&on));
    assert_eq!(on.stdout.text(), "hello");
    server.abort();
}

#[tokio::test]
async fn secrets_of_the_service_are_not_readable() {
    let p = place();
    // The service's own environment holds a secret; the child must see it nowhere.
    // SAFETY: this variable is unique to this test and read only through child processes.
    unsafe { std::env::set_var("TOLLGATE_TEST_SERVICE_TOKEN", "hunter2-sandbox-canary") };
    let env = env(&p);
    assert!(!env.contains_key("TOLLGATE_TEST_SERVICE_TOKEN"));
    let service_pid = std::process::id();
    let probe = format!(
        "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; cat /proc/{service_pid}/environ 2>&1; ls /proc | grep -c '^[0-9]'"
    );
    let outcome = runner()
        .run(
            &probe,
            &spec(&p, SandboxPolicy::WorkspaceWrite, false),
            &env,
            Duration::from_secs(20),
            pending(),
        )
        .await
        .unwrap();
    let all = text(&outcome);
    assert!(!all.contains("hunter2-sandbox-canary"), "{all}");
    // Only the command's own processes are visible in its /proc.
    let visible: usize = outcome
        .stdout
        .text()
        .lines()
        .last()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(visible <= 4, "{all}");
    assert!(
        outcome
            .stdout
            .text()
            .contains(&format!("HOME={}", p.root.join("ws").display())),
        "{all}"
    );
}

/// The processes (as `pgrep -fa` lists them) whose whole command line matches `pattern`.
fn processes_matching(pattern: &str) -> String {
    let found = std::process::Command::new("pgrep")
        .args(["-fa", pattern])
        .output()
        .unwrap();
    String::from_utf8_lossy(&found.stdout).into_owned()
}

/// Polls (every 20 ms, for at most 20 s) until `done` holds; whether it did.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..1000 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// Runs `command` with a 1 s timeout in a workspace-write sandbox, seeing a process whose
/// command line matches `pattern` (built from the place's unique `marker`) while it runs, and
/// asserting it is gone afterwards: one that outlived the timeout would still be running.
async fn outlives_no_timeout(p: &Place, command: &str, pattern: &str) {
    let survivors = || processes_matching(pattern);
    let spec = spec(p, SandboxPolicy::WorkspaceWrite, false);
    let env = env(p);
    let runner = runner();
    let run = runner.run(command, &spec, &env, Duration::from_secs(1), pending());
    // While it runs, the process is seen from here: its absence afterwards means something.
    let (outcome, seen) = tokio::join!(run, eventually(|| !survivors().is_empty()));
    let outcome = outcome.unwrap();
    assert!(seen, "{pattern} never showed up");
    assert!(outcome.timed_out);
    assert_eq!(outcome.exit_code, None);
    // The namespace's end reaches its processes just after the helper's (a death signal):
    // polled for about 30 s, well short of the commands' own end.
    let gone = eventually(|| survivors().is_empty()).await;
    assert!(gone, "it outlived the timeout: {}", survivors());
}

/// A name unique to this test's place, to find its processes from outside the namespace
/// (other tests run beside this one).
fn marker(p: &Place, what: &str) -> String {
    format!(
        "tollgate-{what}-{}",
        p.root.file_name().unwrap().to_string_lossy()
    )
}

#[tokio::test]
async fn a_timeout_kills_the_whole_namespace() {
    let p = place();
    let marker = marker(&p, "beat");
    let command = format!(
        "setsid sh -c 'while true; do date +%s%N > beat; sleep 0.1; done # {marker}' & sleep 30"
    );
    // The grandchild alone: the shell and the helper above it carry the marker too, but their
    // command lines start otherwise.
    outlives_no_timeout(&p, &command, &format!("^sh -c while true.*{marker}$")).await;
    assert!(p.root.join("ws/beat").exists(), "the grandchild never beat");
}

/// A command may clear its own death signal (`prctl(PR_SET_PDEATHSIG, 0)`, as any program can,
/// and as the kernel does at the exec of a program with file capabilities). Were the command
/// the namespace's PID 1, that one would outlive the helper killed at the timeout, and the
/// namespace with it; PID 1 is the helper's own code, which never execs.
#[tokio::test]
async fn a_command_that_drops_its_death_signal_still_ends_at_its_timeout() {
    let p = place();
    let marker = marker(&p, "undying");
    #[cfg(target_arch = "x86_64")]
    const PRCTL: u32 = 157;
    #[cfg(target_arch = "aarch64")]
    const PRCTL: u32 = 167;
    // PR_SET_PDEATHSIG is 1. `exec`: the command replaces the shell, as it would replace
    // PID 1 were the shell PID 1.
    let command = format!("exec perl -e 'syscall({PRCTL}, 1, 0); sleep 120' {marker}");
    outlives_no_timeout(&p, &command, &format!("^perl -e .*{marker}$")).await;
}

#[tokio::test]
async fn cancel_kills_and_reports() {
    let p = place();
    let started = p.root.join("ws/started");
    // Cancelled once the command has started (it leaves a marker first).
    let cancel = async {
        assert!(eventually(|| started.exists()).await, "it never started");
    };
    let outcome = runner()
        .run(
            "touch started && sleep 30",
            &spec(&p, SandboxPolicy::WorkspaceWrite, false),
            &env(&p),
            Duration::from_secs(60),
            cancel,
        )
        .await
        .unwrap();
    assert!(outcome.cancelled);
    assert!(outcome.duration < Duration::from_secs(10));
}

#[tokio::test]
async fn output_is_capped_and_exit_codes_kept() {
    let p = place();
    let flood = run(
        &p,
        SandboxPolicy::WorkspaceWrite,
        false,
        "head -c 1000000 /dev/zero; echo err >&2; exit 3",
    )
    .await;
    assert_eq!(flood.exit_code, Some(3));
    assert_eq!(flood.stdout.bytes.len(), OUTPUT_CAP);
    assert_eq!(flood.stdout.dropped, 1_000_000 - OUTPUT_CAP as u64);
    assert!(flood.stdout.text().ends_with("more bytes truncated]"));
    assert_eq!(flood.stderr.text(), "err\n");
}

#[tokio::test]
async fn danger_full_access_is_unconfined_but_bounded() {
    let p = place();
    let target = p.root.join("outside/written-unconfined");
    let outcome = run(
        &p,
        SandboxPolicy::DangerFullAccess,
        false,
        &format!("touch '{}'", target.display()),
    )
    .await;
    assert_eq!(outcome.exit_code, Some(0), "{}", text(&outcome));
    assert!(target.exists());
    let slow = runner()
        .run(
            "sleep 30",
            &spec(&p, SandboxPolicy::DangerFullAccess, false),
            &env(&p),
            Duration::from_millis(500),
            pending(),
        )
        .await
        .unwrap();
    assert!(slow.timed_out);
    // A process it leaves running in a session of its own (out of reach of the kill of its
    // process group) holds the output pipes: what the command wrote is handed back soon after
    // it ends, not when that process does.
    let left = tokio::time::timeout(
        Duration::from_secs(60),
        runner().run(
            "setsid sleep 1000 & echo $!; echo done",
            &spec(&p, SandboxPolicy::DangerFullAccess, false),
            &env(&p),
            Duration::from_secs(300),
            pending(),
        ),
    )
    .await
    .expect("the run waited for the process its command left running")
    .unwrap();
    let out = left.stdout.text();
    let _ = std::process::Command::new("kill")
        .args(["-9", out.lines().next().unwrap_or_default()])
        .status();
    assert_eq!(left.exit_code, Some(0), "{}", text(&left));
    assert!(left.stdout.left_open && out.ends_with("done\n"), "{out}");
    // Confined, the command's namespace ends with it: nothing is left to hold the pipes.
    let confined = run(
        &p,
        SandboxPolicy::WorkspaceWrite,
        false,
        "setsid sleep 1000 & echo done",
    )
    .await;
    assert_eq!(confined.stdout.text(), "done\n", "{}", text(&confined));
    assert!(!confined.stdout.left_open);
}
