//! Path views of shell words for the secret and device rules: quotes removed, `~`, `$HOME` and
//! `${HOME}` read as home, absolute paths normalized (`/etc//shadow` and `/etc/../etc/shadow`
//! are `/etc/shadow`), and globs matched against the secrets they could reach.

use crate::policy::glob::{Glob, LeadingDot};
use crate::policy::shell::ast::{Word, WordPart};
use crate::policy::shell::marks::{self, Marks};

/// The word as a path: home references written `~`, lexically normalized.
#[must_use]
pub fn path_view(word: &Word) -> String {
    normalize(&path_text(word))
}

/// [`path_view`] before normalizing: for a word that carries a path after an option
/// (`--chdir=/`, `-C/`), whose path must be taken out first (normalized whole, the `/` of
/// `--chdir=/` is a trailing slash, and `--chdir=/etc/..` is `--chdir=`).
pub fn path_text(word: &Word) -> String {
    let mut text = String::new();
    for part in &word.parts {
        match part {
            WordPart::Literal { text: t, .. } => text.push_str(t),
            // `~+` is the working directory, as a relative path is.
            WordPart::Tilde { user } if user == "+" => text.push('.'),
            WordPart::Tilde { user } => {
                text.push('~');
                text.push_str(user);
            }
            WordPart::Param { name, op, .. } if name == "HOME" && op.is_empty() => text.push('~'),
            _ => text.push('\u{1}'),
        }
    }
    text
}

/// Lexical normalization: repeated and trailing slashes, `.` and `..` components.
#[must_use]
pub fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() && !path.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// Brace expansions a word may have before it is refused as too many to check.
pub const MAX_BRACE_WORDS: usize = 256;

/// Secret files, as paths a glob is matched against.
const SECRET_SAMPLES: &[&str] = &[
    "/etc/passwd",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/master.passwd",
    "~/.ssh/id_rsa",
    "~/.ssh/id_ed25519",
    "~/.ssh/id_ecdsa",
    "~/.ssh/authorized_keys",
    "~/.ssh/known_hosts",
    "~/.aws/credentials",
    "~/.gnupg/private-keys-v1.d",
    "~/.netrc",
    "~/.git-credentials",
    "/proc/1/environ",
    "~/.kube/config",
    "~/.docker/config.json",
    "~/.config/gh/hosts.yml",
    "~/.config/gcloud/credentials.db",
    "~/.pypirc",
    "~/.npmrc",
    "~/.cargo/credentials.toml",
    "/run/secrets/kubernetes.io/serviceaccount/token",
    "/var/run/secrets/kubernetes.io/serviceaccount/token",
    "/etc/ssh/ssh_host_ed25519_key",
    "/etc/kubernetes/admin.conf",
    "/etc/ssl/private/server.key",
    "/etc/wireguard/wg0.conf",
    "/etc/krb5.keytab",
    "~/.pgpass",
    "~/.vault-token",
    "~/.bash_history",
    "/dev/mem",
];

/// Why a path names a secret, if it does.
#[must_use]
pub fn secret_in_path(path: &str) -> Option<&'static str> {
    let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    // `/proc/<pid>/root/…` is the path from `/`; `/proc/<pid>/fd/<n>/…` and `…/cwd/…` are
    // under a directory only known when it runs: a secret's file name there is taken as one.
    if let ["proc", _, kind, rest @ ..] = components.as_slice() {
        let rest = match *kind {
            "root" => rest,
            "fd" => rest.get(1..).unwrap_or(&[]),
            "cwd" => rest,
            _ => &[],
        };
        if *kind == "root" {
            return secret_in_path(&format!("/{}", rest.join("/")));
        }
        let secret_name = |c: &&str| {
            ["passwd", "shadow", "gshadow", "sudoers", "master.passwd"]
                .iter()
                .any(|f| c.starts_with(f))
                || (c.starts_with("id_") && !c.ends_with(".pub"))
                || matches!(*c, "credentials" | ".netrc" | ".git-credentials")
                || [
                    ".npmrc",
                    ".pypirc",
                    ".pgpass",
                    ".vault-token",
                    "krb5.keytab",
                ]
                .iter()
                .any(|f| c.starts_with(f))
        };
        if rest.iter().any(secret_name) {
            return Some("a secret's file name, through a directory only known when it runs");
        }
    }
    // A process's environment: under `danger-full-access` the service's own (`$PPID`), with
    // its bot token and provider key.
    if components.first() == Some(&"proc") && components.last() == Some(&"environ") {
        return Some("a process's environment, where the service keeps its tokens and keys");
    }
    let pairs = || components.windows(2);
    // Backups count too (`/etc/shadow-`, `/etc/passwd.bak`).
    if pairs().any(|w| {
        w[0] == "etc"
            && ["passwd", "shadow", "gshadow", "sudoers", "master.passwd"]
                .iter()
                .any(|f| w[1].starts_with(f))
    }) {
        return Some("the system's account and sudo files");
    }
    // The directories themselves, read whole (`cp -r ~/.ssh k`, `grep -r . ~/.gnupg`).
    if let [.., dir] = components.as_slice()
        && matches!(*dir, ".ssh" | ".gnupg" | ".aws")
    {
        return Some("a directory of keys or credentials");
    }
    if components.windows(3).any(|w| {
        w[0] == "var" && w[1] == "backups" && (w[2].contains("shadow") || w[2].contains("passwd"))
    }) {
        return Some("the system's account files (a backup copy)");
    }
    if pairs().any(|w| w[0] == ".ssh" && w[1].starts_with("id_") && !w[1].ends_with(".pub"))
        || components
            .iter()
            .any(|c| matches!(*c, "authorized_keys" | "authorized_keys2" | "known_hosts"))
    {
        return Some("SSH keys and trust files");
    }
    if pairs().any(|w| w[0] == ".aws" && w[1] == "credentials") {
        return Some("cloud credentials");
    }
    if pairs().any(|w| w[0] == ".gnupg" && w[1].starts_with("private-keys")) {
        return Some("GnuPG private keys");
    }
    if components
        .iter()
        .any(|c| matches!(*c, ".netrc" | ".git-credentials"))
    {
        return Some("stored login credentials");
    }
    super::credentials::credential_in(&components)
}

/// Whether a path with a part known only when it runs (`/etc/$c`, `~/$f`, `if=/etc/$x`)
/// starts like a secret's: what is written so far leads to one.
#[must_use]
pub fn built_path_may_name_secret(word: &Word) -> bool {
    // Most words cannot start like a secret's path: tell them apart without building one.
    let text = word.text();
    let could = text.starts_with(['/', '~'])
        || text.starts_with("$HOME")
        || text.starts_with("${HOME")
        || text.contains("=/")
        || text.contains("=~");
    if !could {
        return false;
    }
    let view = path_view(word);
    let Some(cut) = view.find('\u{1}') else {
        return false;
    };
    let head = &view[..cut];
    let head = head.rsplit_once('=').map_or(head, |(_, value)| value);
    head.len() >= 2
        && (head.starts_with('/') || head.starts_with('~'))
        && SECRET_SAMPLES.iter().any(|secret| secret.starts_with(head))
}

/// Why a word names a secret: as a path, after an `=` (`if=/etc/shadow`, `--file=…`), as a
/// glob that could expand to one, or as one of its brace expansions (`/etc/sh{a,}dow`). A
/// relative word is also read from `cwd`, the directory an earlier `cd` moved to
/// (`cd /etc && cat shadow`).
#[must_use]
pub fn secret_in_word(word: &Word, marks: Marks, cwd: Option<&str>) -> Option<&'static str> {
    let text = word.text();
    let relative = text.starts_with("~+")
        || (!text.starts_with('/') && !text.starts_with('~') && !text.starts_with('$'));
    let cwd = cwd.filter(|_| relative);
    let hinted = marks.secret_hint || cwd.is_some_and(|d| marks::marks(d).secret_hint);
    let could_expand_to_one = word.brace || (word.glob && (text.contains('/') || cwd.is_some()));
    if !hinted && !could_expand_to_one {
        return None;
    }
    // `~+` is the working directory (`cd /etc && cat ~+/shadow`).
    let view = path_view(word);
    let view = match view.strip_prefix("~+") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!(".{rest}"),
        _ => view,
    };
    let path = match cwd {
        Some(dir) => normalize(&format!("{dir}/{view}")),
        None => view,
    };
    let mut candidates = if word.brace {
        match expand_braces(&path, MAX_BRACE_WORDS) {
            Some(words) => words,
            // Too many to check: refused where it looks like a secret's path, else let be.
            None if hinted => return Some("one of more brace-expanded paths than can be checked"),
            None => return None,
        }
    } else {
        vec![path]
    };
    let with_values: Vec<String> = candidates
        .iter()
        .filter_map(|c| c.split_once('=').map(|(_, v)| normalize(v)))
        .collect();
    candidates.extend(with_values);
    for candidate in &candidates {
        let candidate = &normalize(candidate);
        if let Some(reason) = secret_in_path(candidate) {
            return Some(reason);
        }
        if word.glob {
            let pattern: Vec<char> = candidate.chars().collect();
            let glob = Glob::new(&pattern);
            // A pattern from the root or a home matches only samples that start as it does
            // before its first wildcard (`/etc/*` only `/etc/…`): each match walks the whole
            // glob. A relative one may match any sample's tail (`.ss?/id_*`).
            let literal = match candidate.find(['*', '?', '[']) {
                Some(at) if candidate.starts_with(['/', '~']) => &candidate[..at],
                _ => "",
            };
            for sample in SECRET_SAMPLES.iter().filter(|s| s.starts_with(literal)) {
                if glob_reaches(&glob, sample) {
                    return secret_in_path(sample);
                }
            }
        }
    }
    None
}

/// The words a brace expression expands to (`a{b,c}d` → `abd`, `acd`; `x{1..3}`, `{a..c}`,
/// `{01..9..2}` as bash counts them), or `None` when there would be more than `limit`: the
/// caller cannot check them all and must not pretend it did.
#[must_use]
pub fn expand_braces(text: &str, limit: usize) -> Option<Vec<String>> {
    let chars: Vec<char> = text.chars().collect();
    let Some(open) = chars.iter().position(|&c| c == '{') else {
        return Some(vec![text.to_string()]);
    };
    let mut depth = 0;
    let mut close = None;
    let mut commas = Vec::new();
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let Some(close) = close else {
        return Some(vec![text.to_string()]);
    };
    let prefix: String = chars[..open].iter().collect();
    let suffix: String = chars[close + 1..].iter().collect();
    let inner: String = chars[open + 1..close].iter().collect();
    let alternatives: Vec<String> = if commas.is_empty() {
        match brace_range(&inner, limit) {
            Some(values) => values?,
            // Not an expansion: keep the braces and expand what follows.
            None => {
                return Some(
                    expand_braces(&suffix, limit)?
                        .into_iter()
                        .map(|rest| format!("{prefix}{{{inner}}}{rest}"))
                        .collect(),
                );
            }
        }
    } else {
        let mut bounds = vec![open];
        bounds.extend(&commas);
        bounds.push(close);
        bounds
            .windows(2)
            .map(|pair| chars[pair[0] + 1..pair[1]].iter().collect())
            .collect()
    };
    let mut out = Vec::new();
    for alternative in alternatives {
        for expanded in expand_braces(&format!("{prefix}{alternative}{suffix}"), limit)? {
            if out.len() >= limit {
                return None;
            }
            out.push(expanded);
        }
    }
    Some(out)
}

/// `1..5`, `05..10..2`, `a..e`: `None` when `inner` is no range; `Some(None)` when it has more
/// than `limit` values.
fn brace_range(inner: &str, limit: usize) -> Option<Option<Vec<String>>> {
    let parts: Vec<&str> = inner.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [from, to] => (*from, *to, 1i64),
        [from, to, step] => (*from, *to, step.parse::<i64>().ok()?.checked_abs()?.max(1)),
        _ => return None,
    };
    let numbers = (from.parse::<i64>(), to.parse::<i64>());
    let (start, end, width, letters) = match numbers {
        (Ok(a), Ok(b)) => {
            let padded = |s: &str| {
                s.trim_start_matches('-').len() > 1 && s.trim_start_matches('-').starts_with('0')
            };
            let width = if padded(from) || padded(to) {
                from.len().max(to.len())
            } else {
                0
            };
            (a, b, width, false)
        }
        _ => {
            let (mut a, mut b) = (from.chars(), to.chars());
            match (a.next(), a.next(), b.next(), b.next()) {
                (Some(x), None, Some(y), None)
                    if x.is_ascii_alphabetic() && y.is_ascii_alphabetic() =>
                {
                    (i64::from(u32::from(x)), i64::from(u32::from(y)), 0, true)
                }
                _ => return None,
            }
        }
    };
    let count = start.abs_diff(end) / step.unsigned_abs() + 1;
    if count > limit as u64 {
        return Some(None);
    }
    let direction = if end >= start { step } else { -step };
    let values = (0..count as i64)
        .map(|i| start + i * direction)
        .map(|v| {
            if letters {
                u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .map_or_else(String::new, String::from)
            } else if width > 0 {
                format!("{v:0width$}")
            } else {
                v.to_string()
            }
        })
        .collect();
    Some(Some(values))
}

/// Whether `pattern` matches `sample` or a tail of it of two components or more (a relative
/// glob like `.ssh/id*` reaches `~/.ssh/id_rsa` from home).
fn glob_reaches(glob: &Glob<'_>, sample: &str) -> bool {
    if glob.matches(&sample.chars().collect::<Vec<_>>(), LeadingDot::Hidden) {
        return true;
    }
    let slashes: Vec<usize> = sample.match_indices('/').map(|(i, _)| i).collect();
    slashes.iter().rev().skip(1).any(|&i| {
        let tail: Vec<char> = sample[i + 1..].chars().collect();
        glob.matches(&tail, LeadingDot::Hidden)
    })
}

/// Block devices whose overwrite destroys a disk.
#[must_use]
pub fn is_block_device(path: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "/dev/sd",
        "/dev/nvme",
        "/dev/vd",
        "/dev/hd",
        "/dev/xvd",
        "/dev/mmcblk",
        "/dev/disk/",
        "/dev/mapper/",
        "/dev/dm-",
        "/dev/md",
    ];
    PREFIXES.iter().any(|p| path.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes() {
        assert_eq!(normalize("/etc//shadow"), "/etc/shadow");
        assert_eq!(normalize("/etc/../etc/shadow"), "/etc/shadow");
        assert_eq!(normalize("/../.."), "/");
        assert_eq!(normalize("a/../../b"), "../b");
        assert_eq!(normalize("/tmp/x/"), "/tmp/x");
    }

    #[test]
    fn braces() {
        let expand = |t: &str, limit| expand_braces(t, limit).unwrap();
        assert_eq!(expand("/etc/sh{a,o}dow", 8), ["/etc/shadow", "/etc/shodow"]);
        assert_eq!(expand("a{b,c}{d,e}", 8), ["abd", "abe", "acd", "ace"]);
        assert_eq!(expand("x{}y", 8), ["x{}y"]);
        assert_eq!(
            expand_braces("{a,b}{c,d}{e,f}", 3),
            None,
            "too many to check"
        );
        assert_eq!(
            expand("/etc/shado{v..x}", 8),
            ["/etc/shadov", "/etc/shadow", "/etc/shadox"]
        );
        assert_eq!(expand("f{3..1}", 8), ["f3", "f2", "f1"]);
        assert_eq!(expand("f{01..10..3}", 8), ["f01", "f04", "f07", "f10"]);
        assert_eq!(expand("{1..x}", 8), ["{1..x}"], "not a range");
        assert_eq!(expand_braces("{1..100000000000}", 8), None);
    }

    #[test]
    fn globs() {
        let m = |p: &str, t: &str| {
            let pattern: Vec<char> = p.chars().collect();
            glob_reaches(&Glob::new(&pattern), t)
        };
        assert!(m("/etc/sha*", "/etc/shadow"));
        assert!(m("/e?c/shadow", "/etc/shadow"));
        assert!(m("~/.ssh/*", "~/.ssh/id_rsa"));
        assert!(m(".ssh/id*", "~/.ssh/id_rsa"));
        assert!(m("/etc/[ps]*", "/etc/shadow"));
        assert!(!m("*/*", "~/.ssh/id_rsa"));
        assert!(!m("*.txt", "/etc/shadow"));
    }
}
