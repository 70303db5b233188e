//! Denylist rules judged on one command's argv (after wrappers): privilege, power, disks,
//! processes, permissions, mounts, firewalls, cron, history, accounts, reverse shells.

use super::paths::{is_block_device, normalize, path_view};
use crate::policy::shell::ast::Word;
use crate::policy::shell::command::CommandView;
use crate::policy::shell::names::{is_privilege, is_ruled};

/// A rule's name (`denylist:<name>`) and the sentence the model is told.
pub type Finding = (&'static str, String);

/// Privilege escalation in the wrappers or as the command itself.
#[must_use]
pub fn privilege(view: &CommandView<'_>) -> Option<Finding> {
    let hit = view
        .wrappers
        .iter()
        .copied()
        .chain(view.name)
        .find(|n| is_privilege(n))?;
    Some((
        "privilege",
        format!("privilege escalation (`{hit}`) is never allowed; the agent runs as itself"),
    ))
}

/// Rules on the effective command's name and arguments.
#[must_use]
pub fn argv_rules(name: &str, args: &[Word]) -> Option<Finding> {
    // Most commands are none of these: answer them without looking at their arguments.
    if [
        "iptables",
        "ip6tables",
        "ebtables",
        "arptables",
        "nft",
        "firewall",
    ]
    .iter()
    .any(|p| name.starts_with(p))
    {
        return Some(("firewall", format!("`{name}` changes the firewall")));
    }
    if let Some(finding) = by_name(name) {
        return Some(finding);
    }
    if !is_ruled(name) && !name.starts_with("mkfs") && !name.starts_with("mke2fs") {
        return None;
    }
    let texts: Vec<&str> = args.iter().skip(1).map(Word::text).collect();
    let has = |t: &str| texts.contains(&t);
    let lower = || -> Vec<String> { texts.iter().map(|t| t.to_ascii_lowercase()).collect() };
    match name {
        "shutdown" | "reboot" | "halt" | "poweroff" | "kexec" => {
            return Some(("power", format!("`{name}` would take the machine down")));
        }
        "init" | "telinit"
            if texts
                .iter()
                .any(|t| t.len() == 1 && "0123456sS".contains(*t)) =>
        {
            return Some(("power", format!("`{name}` changes the runlevel")));
        }
        "systemctl" | "loginctl"
            if texts.iter().any(|t| {
                let unit = t.strip_suffix(".target").unwrap_or(t);
                matches!(
                    unit,
                    "poweroff"
                        | "reboot"
                        | "soft-reboot"
                        | "halt"
                        | "kexec"
                        | "suspend"
                        | "hibernate"
                        | "hybrid-sleep"
                        | "rescue"
                        | "emergency"
                        | "shutdown"
                        | "suspend-then-hibernate"
                        | "runlevel0"
                        | "runlevel6"
                        | "ctrl-alt-del"
                        | "exit"
                )
            }) =>
        {
            return Some(("power", format!("`{name}` would take the machine down")));
        }
        "systemctl" if has("kill") => {
            return Some((
                "kill",
                "`systemctl kill` signals a service's processes".to_string(),
            ));
        }
        "fuser" if has_short_flag(&texts, &['k']) || has("--kill") => {
            return Some((
                "kill",
                "`fuser -k` kills the processes using a file".to_string(),
            ));
        }
        // dcfldd is dd with hashing, and takes dd's operands.
        "dd" | "dcfldd" => {
            for t in &texts {
                if let Some(target) = t.strip_prefix("of=")
                    && through_proc_root(&normalize(target)).starts_with("/dev/")
                {
                    return Some((
                        "disk-write",
                        format!("`{name}` writing to the device `{target}`"),
                    ));
                }
                if let Some(source) = t.strip_prefix("if=")
                    && matches!(
                        normalize(source).as_str(),
                        "/dev/zero" | "/dev/random" | "/dev/urandom"
                    )
                {
                    return Some(("disk-write", format!("`{name}` filling from `{source}`")));
                }
            }
        }
        // `ddrescue IN OUT [MAP]` writes OUT: any operand after the first onto a device.
        "ddrescue"
            if args
                .iter()
                .skip(1)
                .filter(|w| !w.text().starts_with('-'))
                .skip(1)
                .any(|w| is_block_device(&path_view(w))) =>
        {
            return Some(("disk-write", "`ddrescue` onto a block device".to_string()));
        }
        // `badblocks -w` writes patterns over the whole device (`-n` writes and restores).
        "badblocks" if has_short_flag(&texts, &['w', 'n']) => {
            return Some((
                "disk-write",
                "`badblocks -w`/`-n` writes over a device".to_string(),
            ));
        }
        "grub-install"
            if !texts
                .iter()
                .all(|t| matches!(*t, "--version" | "-V" | "--help" | "-h")) =>
        {
            return Some((
                "disk-write",
                "`grub-install` writes a disk's boot code".to_string(),
            ));
        }
        // File capabilities are setuid by another name (`cap_setuid+ep` on an interpreter).
        // Any capability text counts, wherever `-v` or `-r` stand (setcap reads its words in
        // order: `setcap cap_setuid+ep x -v` sets, then verifies nothing).
        "setcap"
            if texts
                .iter()
                .any(|t| !t.starts_with('-') && t.contains(['+', '='])) =>
        {
            return Some((
                "permissions",
                "`setcap` gives a program privileges (as setuid would)".to_string(),
            ));
        }
        "wipefs" | "blkdiscard" | "shred" | "truncate" | "fdisk" | "sfdisk" | "parted"
        | "mkswap"
            if !(matches!(name, "fdisk" | "sfdisk" | "parted")
                && texts.iter().all(|t| *t == "-l" || *t == "--list")) =>
        {
            return Some(("disk-write", format!("`{name}` destroys data")));
        }
        "hdparm"
            if texts
                .iter()
                .any(|t| t.starts_with("--security-erase") || t.starts_with("--trim-sector")) =>
        {
            return Some(("disk-write", "`hdparm` erasing a disk".to_string()));
        }
        "tee" | "cp" | "mv" | "install" | "ln"
            if args.iter().skip(1).any(|w| is_block_device(&path_view(w))) =>
        {
            return Some(("disk-write", format!("`{name}` onto a block device")));
        }
        // `install -m 4755 /bin/sh ./x` makes a setuid copy, as `chmod 4755` would.
        "install" => {
            let mut it = texts.iter();
            while let Some(t) = it.next() {
                let mode = match *t {
                    "-m" | "--mode" => it.next().copied(),
                    s if s.starts_with("--mode=") => Some(&s[7..]),
                    s if s.starts_with("-m") && s.len() > 2 => Some(&s[2..]),
                    _ => None,
                };
                if let Some(mode) = mode
                    && let Some(finding) = chmod(&[mode])
                {
                    return Some(finding);
                }
            }
        }
        "kill" => {
            let lower = lower();
            let mut it = lower.iter();
            while let Some(t) = it.next() {
                let signals: Vec<&str> = match t.as_str() {
                    "-s" | "-n" | "--signal" => it.next().map(String::as_str).into_iter().collect(),
                    s if s.starts_with("--signal=") => vec![&s[9..]],
                    // `-9`, `-KILL`, or a signal attached to `-s`/`-n` (`-sKILL`, `-n9`).
                    s if s.starts_with('-') && s.len() > 1 => {
                        let mut read = vec![&s[1..]];
                        if s.starts_with("-s") || s.starts_with("-n") {
                            read.push(&s[2..]);
                        }
                        read
                    }
                    _ => Vec::new(),
                };
                // `-09` is 9.
                let is_kill = |s: &str| {
                    let trimmed = s.trim_start_matches('0');
                    matches!(
                        if trimmed.is_empty() { s } else { trimmed },
                        "9" | "kill" | "sigkill"
                    )
                };
                if signals.into_iter().any(is_kill) {
                    return Some((
                        "kill",
                        "`kill -9` gives a process no chance to clean up".to_string(),
                    ));
                }
            }
        }
        "pkill" | "killall" | "killall5" => {
            return Some(("kill", format!("`{name}` kills processes by name")));
        }
        "chmod" => return chmod(&texts),
        "chown" => {
            let spec = texts.iter().find(|t| !t.starts_with('-'))?;
            let owner = spec.split([':', '.']).next().unwrap_or("");
            // `+0` is uid 0 written as a number.
            let owner = owner.strip_prefix('+').unwrap_or(owner);
            let numeric_root = !owner.is_empty() && owner.chars().all(|c| c == '0');
            if owner == "root" || numeric_root {
                return Some(("permissions", "`chown` to root".to_string()));
            }
        }
        "mount" | "umount" => return Some(("mount", format!("`{name}` changes the mounts"))),
        "iptables" | "ip6tables" | "iptables-restore" | "ip6tables-restore" | "iptables-legacy"
        | "iptables-nft" | "nft" | "ufw" | "firewall-cmd" | "ebtables" | "arptables" => {
            return Some(("firewall", format!("`{name}` changes the firewall")));
        }
        "crontab" if has_short_flag(&texts, &['e', 'r']) => {
            return Some((
                "crontab",
                "`crontab -e`/`-r` edits or removes the crontab".to_string(),
            ));
        }
        "history" if has_short_flag(&texts, &['c', 'w', 'd', 'a']) => {
            return Some(("history", "wiping or rewriting shell history".to_string()));
        }
        "useradd" | "userdel" | "usermod" | "groupadd" | "groupdel" | "groupmod" | "chpasswd"
        | "adduser" | "deluser" | "addgroup" | "delgroup" | "newusers" | "chage" => {
            return Some(("accounts", format!("`{name}` changes user accounts")));
        }
        "passwd" if texts.iter().any(|t| !t.starts_with('-')) || has("-d") => {
            return Some(("accounts", "`passwd` on another account".to_string()));
        }
        "nc" | "ncat" | "netcat"
            if has_short_flag(&texts, &['e', 'c'])
                || texts.iter().any(|t| {
                    t.starts_with("--exec")
                        || t.starts_with("--sh-exec")
                        || t.starts_with("--lua-exec")
                }) =>
        {
            return Some((
                "reverse-shell",
                format!("`{name}` handing a shell to the network"),
            ));
        }
        "socat"
            if lower()
                .iter()
                .any(|t| t.contains("exec:") || t.contains("system:")) =>
        {
            return Some((
                "reverse-shell",
                "`socat` running a program for the network".to_string(),
            ));
        }
        _ => {}
    }
    if name.starts_with("mkfs") || name.starts_with("mke2fs") {
        return Some(("disk-write", format!("`{name}` formats a filesystem")));
    }
    None
}

/// Commands denied by name alone, in any form: mounts, disk partitioning and formatting,
/// encryption of devices, killing by file, and the power and bus tools that take the machine
/// down.
fn by_name(name: &str) -> Option<Finding> {
    let (rule, what) = match name {
        n if n.starts_with("mount.") || n.starts_with("umount.") => ("mount", "changes the mounts"),
        "systemd-mount" | "systemd-umount" | "fusermount" | "fusermount3" => {
            ("mount", "changes the mounts")
        }
        "sgdisk" | "gdisk" | "cgdisk" | "cfdisk" | "partx" | "mkdosfs" | "mkntfs" | "mkexfatfs"
        | "cryptsetup" | "mdadm" | "lvremove" | "vgremove" | "pvremove" | "zpool" => {
            ("disk-write", "changes disks, partitions or filesystems")
        }
        "skill" | "snice" => ("kill", "kills or signals processes"),
        "rtcwake"
        | "busctl"
        | "dbus-send"
        | "gdbus"
        | "xtables-nft-multi"
        | "xtables-legacy-multi" => (
            "power",
            "reaches system services (power, firewall) directly",
        ),
        _ => return None,
    };
    Some((rule, format!("`{name}` {what}")))
}

fn has_short_flag(texts: &[&str], letters: &[char]) -> bool {
    texts.iter().any(|t| {
        t.starts_with('-') && !t.starts_with("--") && t[1..].chars().any(|c| letters.contains(&c))
    })
}

/// `/proc/self/root/…` (or `/proc/<pid>/root/…`) is the same path from `/`.
fn through_proc_root(path: &str) -> String {
    let mut parts = path.splitn(5, '/');
    match (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) {
        (Some(""), Some("proc"), Some(_), Some("root"), rest) => format!("/{}", rest.unwrap_or("")),
        _ => path.to_string(),
    }
}

fn chmod(texts: &[&str]) -> Option<Finding> {
    // `--reference=FILE` copies FILE's mode, setuid bits included.
    if texts
        .iter()
        .any(|t| t.starts_with("--reference") || t.starts_with("--ref"))
    {
        return Some((
            "permissions",
            "`chmod --reference` copies another file's mode (setuid bits included)".to_string(),
        ));
    }
    let mode = texts
        .iter()
        .find(|t| !t.starts_with('-') || is_symbolic_removal(t))?;
    let world = || {
        Some((
            "permissions",
            format!("`chmod {mode}` opens the file to everyone"),
        ))
    };
    let setid = || Some(("permissions", format!("`chmod {mode}` sets setuid/setgid")));
    if !mode.is_empty() && mode.chars().all(|c| c.is_ascii_digit()) {
        let digits: Vec<u32> = mode.chars().filter_map(|c| c.to_digit(8)).collect();
        if digits.len() != mode.len() {
            return None;
        }
        let last3: Vec<u32> = digits.iter().rev().take(3).rev().copied().collect();
        if last3 == [7, 7, 7] {
            return world();
        }
        if digits.len() >= 4 && digits[digits.len() - 4] & 0b110 != 0 {
            return setid();
        }
        return None;
    }
    // Symbolic clauses, applied in order (`u=rwx,g=rwx,o=rwx` is 777 too): what each class
    // ends up granted. `X` counts as `x`; copying a class (`o=u`) counts as all three.
    let mut granted = [[false; 3]; 3];
    for clause in mode.split(',') {
        let who_len = clause
            .find(|c: char| !matches!(c, 'u' | 'g' | 'o' | 'a'))
            .unwrap_or(clause.len());
        let who = &clause[..who_len];
        let classes: Vec<usize> = if who.is_empty() || who.contains('a') {
            vec![0, 1, 2]
        } else {
            who.chars().filter_map(|c| "ugo".find(c)).collect()
        };
        let mut rest = &clause[who_len..];
        while let Some(op) = rest.chars().next().filter(|c| matches!(c, '+' | '-' | '=')) {
            let perms_len = rest[1..]
                .find(['+', '-', '='])
                .map_or(rest.len() - 1, |i| i);
            let perms = &rest[1..1 + perms_len];
            rest = &rest[1 + perms_len..];
            if op != '-' && perms.contains(['s']) {
                return setid();
            }
            let copies = perms.contains(['u', 'g', 'o']);
            let bits = [
                copies || perms.contains('r'),
                copies || perms.contains('w'),
                copies || perms.contains(['x', 'X']),
            ];
            for &class in &classes {
                for (bit, &given) in bits.iter().enumerate() {
                    match op {
                        '+' => granted[class][bit] |= given,
                        '-' => granted[class][bit] &= !given,
                        _ => granted[class][bit] = given,
                    }
                }
            }
        }
    }
    if granted.iter().all(|class| class.iter().all(|b| *b)) {
        return world();
    }
    None
}

/// `chmod -w file` starts with `-` but is a mode, not an option.
fn is_symbolic_removal(t: &str) -> bool {
    t.len() > 1 && t[1..].chars().all(|c| "rwxXst".contains(c))
}
