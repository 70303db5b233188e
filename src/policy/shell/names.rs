//! The lists of program names the rules look up, each written once: the macro makes the list
//! (for whoever needs to show it) and a `match` over it (what every segment's lookup uses — a
//! length switch and one comparison instead of a scan of the list).

/// `names!(doc; pub const LIST, pub fn is_in = ["a", "b"]);`
macro_rules! names {
    ($(#[$doc:meta])* $vis:vis const $list:ident, fn $test:ident = [$($name:literal),+ $(,)?]) => {
        $(#[$doc])*
        $vis const $list: &[&str] = &[$($name),+];

        $(#[$doc])*
        #[must_use]
        $vis fn $test(name: &str) -> bool {
            matches!(name, $($name)|+)
        }
    };
}

/// For the lists kept beside their tables elsewhere (`launchers`).
pub(crate) use names;

names!(
    /// Shells: `-c` runs their argument as a script.
    pub const SHELLS, fn is_shell = [
        "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "rbash", "yash",
        "ksh93", "rksh93", "lksh", "oksh", "loksh", "pdksh", "posh", "sash", "bash-static",
        "zsh-static", "bosh", "osh", "ysh", "hush", "elvish", "xonsh", "rc", "es", "nu", "ion",
        "murex",
    ]
);

names!(
    /// Interpreters, by family (their version suffix removed: `python3.11` is `python`).
    pub const INTERPRETERS, fn is_interpreter_family = [
        "python", "pypy", "node", "nodejs", "deno", "bun", "ruby", "perl", "php", "lua", "luajit",
        "osascript", "pwsh", "powershell", "expect", "tclsh", "wish", "Rscript", "R", "julia",
        "elixir", "iex", "erl", "escript", "racket", "guile", "sbcl", "clisp", "ghc", "ghci",
        "runghc", "runhaskell", "groovy", "scala", "kotlin", "jshell", "ipython",
    ]
);

names!(
    /// Programs that read commands — some of which run programs — from standard input (`ed`
    /// and `ex` with `!cmd`, `gdb`'s `shell`, `sqlite3`'s `.shell`, `psql`'s `\!`).
    pub const STDIN_SCRIPTED, fn reads_script_from_stdin = [
        "ed", "ex", "gdb", "lldb", "sqlite3", "psql", "mysql", "mariadb", "dc", "m4", "gm4",
        "gnuplot", "octave", "octave-cli",
    ]
);

names!(
    /// Programs that talk to the network.
    pub const NETWORK_CLIENTS, fn is_network_client = [
        "curl", "wget", "wget2", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync",
        "ftp", "tftp", "telnet", "aria2c", "fetch", "http", "https", "xh", "lftp", "ncftp",
        "axel", "curlie", "rsh", "rlogin", "rcp", "mosh",
    ]
);

names!(
    /// Programs Debian and others install under variant names (`nc.openbsd`, `vim.tiny`).
    pub const VARIANT_FAMILIES, fn has_variants = [
        "nc", "netcat", "ncat", "telnet", "ftp", "vim", "vi", "awk", "sed", "tar", "find", "curl",
        "wget", "socat", "bash", "sh", "ssh", "sudo",
    ]
);

names!(
    /// Privilege escalation, as a wrapper or the command itself.
    pub const PRIVILEGE, fn is_privilege = [
        "sudo", "su", "doas", "visudo", "sudoedit", "pkexec", "run0", "runuser", "sudo-rs",
        "su-rs", "setuidgid", "gpasswd", "vipw", "vigr", "s6-setuidgid", "s6-applyuidgid",
        "really", "super", "userv", "ksu", "please", "kdesu", "kdesudo", "gksu", "gksudo", "dzdo",
        "pbrun", "pfexec", "lxqt-sudo",
    ]
);

names!(
    /// Every command name a denylist argv rule looks at (the rest are answered by name alone).
    pub const RULED, fn is_ruled = [
        "shutdown", "reboot", "halt", "poweroff", "kexec", "init", "telinit", "systemctl",
        "loginctl", "dd", "wipefs", "blkdiscard", "shred", "truncate", "fdisk", "sfdisk", "parted",
        "mkswap", "hdparm", "tee", "cp", "mv", "install", "ln", "kill", "pkill", "killall",
        "killall5", "chmod", "chown", "mount", "umount", "iptables", "ip6tables",
        "iptables-restore", "ip6tables-restore", "iptables-legacy", "iptables-nft", "nft", "ufw",
        "firewall-cmd", "ebtables", "arptables", "crontab", "history", "useradd", "userdel",
        "usermod", "groupadd", "groupdel", "groupmod", "chpasswd", "adduser", "deluser", "addgroup",
        "delgroup", "newusers", "chage", "passwd", "nc", "ncat", "netcat", "socat", "fuser",
        "dcfldd", "ddrescue", "badblocks", "setcap", "grub-install",
    ]
);

names!(
    /// Programs whose options can be code or name programs (the hazard rules read them): an
    /// option built when the command runs (`X=-delete; find . $X`) cannot be judged.
    pub const ARGUMENT_SENSITIVE, fn argument_sensitive = [
        "find", "gfind", "bfs", "fd", "fdfind", "sed", "gsed", "awk", "gawk", "mawk", "nawk",
        "git", "tar", "gtar", "bsdtar", "rg", "sort", "zip", "vim", "vi", "nvim", "ex", "view",
        "editor", "ed", "less", "more", "man", "gdb", "lldb", "strace", "ltrace", "make", "gmake",
        "cargo", "go", "npm", "pnpm", "yarn", "bun", "uv", "pipx", "sqlite3", "dc", "xargs",
        "env", "parallel", "tcpdump", "crontab", "at", "enable", "mapfile", "readarray", "hash",
        "shopt", "set", "let", "trap", "eval", "source", ".", "exec", "command", "builtin", "rm",
        "split", "pip", "pip3", "gh", "kubectl", "helm", "faketime", "ip", "nix-shell", "nix",
        "emacs", "emacsclient", "gpg", "gpg2", "deno", "pdm", "hatch", "rye", "mise", "direnv",
        "start-stop-daemon", "flatpak-spawn",
    ]
);

names!(
    /// Builtins that set variables named in their arguments (`read x`, `declare x=1`,
    /// `printf -v x`, `mapfile x`, `unset x`, `let x=1`, `wait -p x`).
    pub const SETS_VARIABLES, fn sets_variables = [
        "export", "declare", "typeset", "local", "readonly", "read", "unset", "mapfile",
        "readarray", "printf", "getopts", "wait", "let",
    ]
);

names!(
    /// Programs whose arguments are a command (see `wrappers::all`, which holds how to
    /// skip each one's options; a test keeps the two in step).
    pub const WRAPPER_NAMES, fn is_wrapper_name = [
        "sudo", "doas", "env", "nohup", "nice", "timeout", "stdbuf", "ionice", "command", "builtin",
        "exec", "xargs", "watch", "time", "setsid", "unbuffer", "busybox", "toybox", "chroot",
        "flock", "taskset", "chrt", "strace", "ltrace", "unshare", "script", "nsenter", "numactl",
        "setpriv", "systemd-run", "faketime", "torsocks", "proxychains", "proxychains4",
        "dbus-run-session", "xvfb-run", "ssh-agent", "valgrind", "catchsegv", "eatmydata",
        "nocache", "chronic", "ifne", "fakeroot", "fakechroot", "cgexec", "runcon", "chpst",
        "firejail", "bwrap", "sg", "setarch", "linux32", "linux64", "prlimit", "cpulimit",
        "sshpass", "dbus-launch", "coproc", "caffeinate", "gosu", "su-exec", "ld.so",
        "systemd-cat", "systemd-inhibit", "tini", "dumb-init", "rlwrap", "envdir", "setlock",
        "softlimit", "trickle", "sem", "proot", "pgrphack", "fghack", "envuidgid", "s6-envdir",
        "s6-envuidgid", "s6-softlimit", "s6-setsid", "s6-setlock", "s6-fghack", "timelimit",
        "x86_64", "i386", "i686", "uname26", "aarch64",
    ]
);
