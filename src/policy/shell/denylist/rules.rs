//! Denylist rules judged on one command's argv (after wrappers): privilege, power, disks,
//! processes, permissions, mounts, firewalls, cron, history, accounts, reverse shells.

use super::paths::{is_block_device, normalize, path_view};
use crate::policy::shell::ast::Word;
use crate::policy::shell::command::CommandView;

/// A rule's name (`denylist:<name>`) and the sentence the model is told.
pub type Finding = (&'static str, String);

/// Every command name an argv rule looks at.
const RULED: &[&str] = &[
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "kexec",
    "init",
    "telinit",
    "systemctl",
    "loginctl",
    "dd",
    "wipefs",
    "blkdiscard",
    "shred",
    "truncate",
    "fdisk",
    "sfdisk",
    "parted",
    "mkswap",
    "hdparm",
    "tee",
    "cp",
    "mv",
    "install",
    "ln",
    "kill",
    "pkill",
    "killall",
    "killall5",
    "chmod",
    "chown",
    "mount",
    "umount",
    "iptables",
    "ip6tables",
    "iptables-restore",
    "ip6tables-restore",
    "iptables-legacy",
    "iptables-nft",
    "nft",
    "ufw",
    "firewall-cmd",
    "ebtables",
    "arptables",
    "crontab",
    "history",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "groupdel",
    "groupmod",
    "chpasswd",
    "adduser",
    "deluser",
    "addgroup",
    "delgroup",
    "newusers",
    "chage",
    "passwd",
    "nc",
    "ncat",
    "netcat",
    "socat",
];

const PRIVILEGE: &[&str] = &[
    "sudo", "su", "doas", "visudo", "sudoedit", "pkexec", "run0", "runuser",
];

/// Privilege escalation in the wrappers or as the command itself.
#[must_use]
pub fn privilege(view: &CommandView<'_>) -> Option<Finding> {
    let hit = view
        .wrappers
        .iter()
        .copied()
        .chain(view.name)
        .find(|n| PRIVILEGE.contains(n))?;
    Some((
        "privilege",
        format!("privilege escalation (`{hit}`) is never allowed; the agent runs as itself"),
    ))
}

/// Rules on the effective command's name and arguments.
#[must_use]
pub fn argv_rules(name: &str, args: &[Word]) -> Option<Finding> {
    // Most commands are none of these: answer them without looking at their arguments.
    if !RULED.contains(&name) && !name.starts_with("mkfs") && !name.starts_with("mke2fs") {
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
                matches!(
                    *t,
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "suspend"
                        | "hibernate"
                        | "rescue"
                        | "emergency"
                )
            }) =>
        {
            return Some(("power", format!("`{name}` would take the machine down")));
        }
        "dd" => {
            for t in &texts {
                if let Some(target) = t.strip_prefix("of=")
                    && normalize(target).starts_with("/dev/")
                {
                    return Some((
                        "disk-write",
                        format!("`dd` writing to the device `{target}`"),
                    ));
                }
                if let Some(source) = t.strip_prefix("if=")
                    && matches!(
                        normalize(source).as_str(),
                        "/dev/zero" | "/dev/random" | "/dev/urandom"
                    )
                {
                    return Some(("disk-write", format!("`dd` filling from `{source}`")));
                }
            }
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
        "kill" => {
            let lower = lower();
            let mut it = lower.iter();
            while let Some(t) = it.next() {
                let signal = match t.as_str() {
                    "-s" | "-n" | "--signal" => it.next().map(String::as_str),
                    s if s.starts_with("--signal=") => Some(&s[9..]),
                    s if s.starts_with('-') => Some(&s[1..]),
                    _ => None,
                };
                if signal.is_some_and(|s| matches!(s, "9" | "kill" | "sigkill")) {
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
            if owner == "root" || owner == "0" {
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

fn has_short_flag(texts: &[&str], letters: &[char]) -> bool {
    texts.iter().any(|t| {
        t.starts_with('-') && !t.starts_with("--") && t[1..].chars().any(|c| letters.contains(&c))
    })
}

fn chmod(texts: &[&str]) -> Option<Finding> {
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
    for clause in mode.split(',') {
        let Some(op_at) = clause.find(['+', '=']) else {
            continue;
        };
        let who = &clause[..op_at];
        let perms = &clause[op_at + 1..];
        if perms.contains('s') {
            return setid();
        }
        let everyone = who == "a" || (who.contains('u') && who.contains('g') && who.contains('o'));
        if everyone && perms.contains('r') && perms.contains('w') && perms.contains('x') {
            return world();
        }
    }
    None
}

/// `chmod -w file` starts with `-` but is a mode, not an option.
fn is_symbolic_removal(t: &str) -> bool {
    t.len() > 1 && t[1..].chars().all(|c| "rwxXst".contains(c))
}
