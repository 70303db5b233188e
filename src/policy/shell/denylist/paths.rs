//! Path views of shell words for the secret and device rules: quotes removed, `~`, `$HOME` and
//! `${HOME}` read as home, absolute paths normalized (`/etc//shadow` and `/etc/../etc/shadow`
//! are `/etc/shadow`), and globs matched against the secrets they could reach.

use crate::policy::glob::{Glob, LeadingDot};
use crate::policy::shell::ast::{Word, WordPart};
use crate::policy::shell::marks::{self, Marks};

/// The word as a path: home references written `~`, lexically normalized.
#[must_use]
pub fn path_view(word: &Word) -> String {
    let mut text = String::new();
    for part in &word.parts {
        match part {
            WordPart::Literal { text: t, .. } => text.push_str(t),
            WordPart::Tilde { user } => {
                text.push('~');
                text.push_str(user);
            }
            WordPart::Param { name, op, .. } if name == "HOME" && op.is_empty() => text.push('~'),
            _ => text.push('\u{1}'),
        }
    }
    normalize(&text)
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
];

/// Why a path names a secret, if it does.
#[must_use]
pub fn secret_in_path(path: &str) -> Option<&'static str> {
    let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
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
    if pairs().any(|w| w[0] == ".ssh" && w[1].starts_with("id_"))
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
    None
}

/// Why a word names a secret: as a path, after an `=` (`if=/etc/shadow`, `--file=…`), as a
/// glob that could expand to one, or as one of its brace expansions (`/etc/sh{a,}dow`). A
/// relative word is also read from `cwd`, the directory an earlier `cd` moved to
/// (`cd /etc && cat shadow`).
#[must_use]
pub fn secret_in_word(word: &Word, marks: Marks, cwd: Option<&str>) -> Option<&'static str> {
    let text = word.text();
    let relative = !text.starts_with('/') && !text.starts_with('~') && !text.starts_with('$');
    let cwd = cwd.filter(|_| relative);
    let hinted = marks.secret_hint || cwd.is_some_and(|d| marks::marks(d).secret_hint);
    let could_expand_to_one = word.brace || (word.glob && (text.contains('/') || cwd.is_some()));
    if !hinted && !could_expand_to_one {
        return None;
    }
    let path = match cwd {
        Some(dir) => normalize(&format!("{dir}/{}", path_view(word))),
        None => path_view(word),
    };
    let mut candidates = if word.brace {
        expand_braces(&path, 64)
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
            for sample in SECRET_SAMPLES {
                if glob_reaches(&glob, sample) {
                    return secret_in_path(sample);
                }
            }
        }
    }
    None
}

/// The words a brace expression expands to (`a{b,c}d` → `abd`, `acd`), at most `limit`; ranges
/// (`{1..3}`) are kept as written. More than `limit` variants keeps the first ones: enough for a
/// denylist, which only needs one that names a secret.
#[must_use]
pub fn expand_braces(text: &str, limit: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let Some(open) = chars.iter().position(|&c| c == '{') else {
        return vec![text.to_string()];
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
        return vec![text.to_string()];
    };
    let prefix: String = chars[..open].iter().collect();
    let suffix: String = chars[close + 1..].iter().collect();
    if commas.is_empty() {
        // Not an alternation: keep the braces and expand what follows.
        return expand_braces(&suffix, limit)
            .into_iter()
            .map(|rest| {
                format!(
                    "{prefix}{{{}}}{rest}",
                    chars[open + 1..close].iter().collect::<String>()
                )
            })
            .collect();
    }
    let mut bounds = vec![open];
    bounds.extend(&commas);
    bounds.push(close);
    let mut out = Vec::new();
    for pair in bounds.windows(2) {
        let alternative: String = chars[pair[0] + 1..pair[1]].iter().collect();
        for expanded in expand_braces(&format!("{prefix}{alternative}{suffix}"), limit) {
            if out.len() >= limit {
                return out;
            }
            out.push(expanded);
        }
    }
    out
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
        assert_eq!(
            expand_braces("/etc/sh{a,o}dow", 8),
            ["/etc/shadow", "/etc/shodow"]
        );
        assert_eq!(
            expand_braces("a{b,c}{d,e}", 8),
            ["abd", "abe", "acd", "ace"]
        );
        assert_eq!(expand_braces("x{}y", 8), ["x{}y"]);
        assert_eq!(expand_braces("{a,b}{c,d}{e,f}", 3).len(), 3);
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
