//! Chain-loaders and single-purpose launchers: the small programs of daemontools, runit, s6
//! and container init systems (tini, gosu, su-exec), and their kin (trickle, GNU parallel's
//! sem, timelimit, proot, eatmydata, nocache, moreutils' chronic and ifne, setarch's own names),
//! each of which sets one thing about a process (its variables, limits, lock, process group,
//! user, bandwidth, root view, syncs, architecture) and execs the command in its remaining
//! arguments. The general table (sudo, env, coreutils, util-linux, tracers) is in
//! `table`.

use super::Wrapper;
use super::table::{positional, wrapper};

pub const CHAIN_LOADERS: &[Wrapper] = &[
    wrapper(
        "chpst",
        &[
            "-u", "-U", "-b", "-e", "-/", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c",
            "-r", "-t",
        ],
    ),
    // Containers' user switchers.
    positional(wrapper("gosu", &[]), 1),
    positional(wrapper("su-exec", &[]), 1),
    // moreutils' and others' single-purpose launchers.
    wrapper("eatmydata", &[]),
    wrapper("nocache", &["-n"]),
    wrapper("chronic", &[]),
    wrapper("ifne", &[]),
    wrapper("tini", &["-p", "-e"]),
    wrapper("dumb-init", &["-r", "--rewrite"]),
    // daemontools' chain-loaders: `envdir DIR CMD`, `setlock [-nNxX] FILE CMD`, `softlimit
    // [-m N …] CMD`. envdir's variables come from files the command line does not show: a
    // wrapped command gets no "always" key (`approval_key`), and the classifier sees it all.
    positional(wrapper("envdir", &[]), 1),
    positional(wrapper("setlock", &[]), 1),
    wrapper(
        "softlimit",
        &[
            "-m", "-d", "-s", "-l", "-a", "-o", "-p", "-f", "-c", "-r", "-t",
        ],
    ),
    wrapper("trickle", &["-w", "-t", "-l", "-n", "-d", "-u", "-L", "-P"]),
    // GNU parallel's `sem [OPTIONS] CMD`.
    wrapper(
        "sem",
        &[
            "-j",
            "--jobs",
            "--id",
            "--semaphorename",
            "--timeout",
            "--semaphoretimeout",
            "--st",
            "-S",
            "--sshlogin",
            "-I",
            "--joblog",
            "--tmpdir",
            "--env",
            "--results",
            "--delay",
            "--nice",
            "--workdir",
            "--load",
            "--retries",
            "--halt",
            "--memfree",
        ],
    ),
    wrapper(
        "proot",
        &[
            "-r",
            "--rootfs",
            "-b",
            "--bind",
            "-m",
            "--mount",
            "-w",
            "--pwd",
            "--cwd",
            "-q",
            "--qemu",
            "-k",
            "--kernel-release",
            "-i",
            "--change-id",
            "-v",
            "--verbose",
            "-p",
            "--port",
            "-R",
            "-S",
        ],
    ),
    wrapper("pgrphack", &[]),
    wrapper("fghack", &[]),
    positional(wrapper("envuidgid", &[]), 1),
    // s6's chain-loaders.
    positional(wrapper("s6-envdir", &["-c"]), 1),
    positional(wrapper("s6-envuidgid", &["-D"]), 1),
    wrapper(
        "s6-softlimit",
        &[
            "-a", "-c", "-d", "-f", "-l", "-m", "-o", "-p", "-r", "-s", "-t",
        ],
    ),
    wrapper("s6-setsid", &["-d"]),
    positional(wrapper("s6-setlock", &["-t"]), 1),
    wrapper("s6-fghack", &[]),
    // `timelimit [-pq] [-S SIG] [-s SIG] [-T N] [-t N] CMD`.
    wrapper("timelimit", &["-S", "-s", "-T", "-t"]),
    // setarch's names for itself: `x86_64 CMD` is `setarch x86_64 CMD`.
    wrapper("x86_64", &[]),
    wrapper("i386", &[]),
    wrapper("i686", &[]),
    wrapper("uname26", &[]),
    wrapper("aarch64", &[]),
];
