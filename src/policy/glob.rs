//! Shell-style glob matching (`*`, `?`, `[…]` with ranges and `!`/`^`), shared by the denylist
//! (which globs could reach a secret) and `find` (which names match). `*` and `?` never cross
//! `/`; whether they match a leading `.` is the caller's choice (the shell's globs do not,
//! `find -name` does).

/// Whether `*` and `?` may match a `.` at the start of a path component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeadingDot {
    /// As the shell expands globs: `*` skips dotfiles.
    Hidden,
    /// As `find -name` matches: `*` matches dotfiles too.
    Matched,
}

/// Whether `pattern` matches all of `text`.
#[must_use]
pub fn glob_match(pattern: &[char], text: &[char], leading_dot: LeadingDot) -> bool {
    let wild_ok = |t: &[char], ti: usize| {
        t[ti] != '/'
            && !(leading_dot == LeadingDot::Hidden && t[ti] == '.' && (ti == 0 || t[ti - 1] == '/'))
    };
    go(pattern, text, 0, 0, &wild_ok)
}

fn go(
    p: &[char],
    t: &[char],
    pi: usize,
    ti: usize,
    wild_ok: &dyn Fn(&[char], usize) -> bool,
) -> bool {
    if pi == p.len() {
        return ti == t.len();
    }
    match p[pi] {
        '*' => {
            go(p, t, pi + 1, ti, wild_ok)
                || (ti < t.len() && wild_ok(t, ti) && go(p, t, pi, ti + 1, wild_ok))
        }
        '?' => ti < t.len() && wild_ok(t, ti) && go(p, t, pi + 1, ti + 1, wild_ok),
        '[' => {
            // A `[` without a non-empty class after it is a literal `[`.
            let close = p[pi + 1..]
                .iter()
                .position(|&c| c == ']')
                .filter(|c| *c > 0);
            let Some(close) = close else {
                return ti < t.len() && t[ti] == '[' && go(p, t, pi + 1, ti + 1, wild_ok);
            };
            if ti >= t.len() {
                return false;
            }
            let class = &p[pi + 1..pi + 1 + close];
            let (negate, class) = match class.first() {
                Some('!' | '^') => (true, &class[1..]),
                _ => (false, class),
            };
            let mut hit = false;
            let mut k = 0;
            while k < class.len() {
                if k + 2 < class.len() && class[k + 1] == '-' {
                    hit |= class[k] <= t[ti] && t[ti] <= class[k + 2];
                    k += 3;
                } else {
                    hit |= class[k] == t[ti];
                    k += 1;
                }
            }
            hit != negate && go(p, t, pi + 2 + close, ti + 1, wild_ok)
        }
        c => ti < t.len() && t[ti] == c && go(p, t, pi + 1, ti + 1, wild_ok),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str, dot: LeadingDot) -> bool {
        glob_match(
            &p.chars().collect::<Vec<_>>(),
            &t.chars().collect::<Vec<_>>(),
            dot,
        )
    }

    #[test]
    fn matches() {
        assert!(m("*.rs", "main.rs", LeadingDot::Matched));
        assert!(!m("*.rs", "main.rsx", LeadingDot::Matched));
        assert!(m("ma?n.[a-z]s", "main.rs", LeadingDot::Hidden));
        assert!(m("ma?n.[a-z]s", "main.rs", LeadingDot::Matched));
        assert!(m("*", "", LeadingDot::Matched));
        assert!(m("*", ".env", LeadingDot::Matched));
        assert!(!m("*", ".env", LeadingDot::Hidden));
        assert!(!m("*", "a/b", LeadingDot::Matched));
        assert!(m("[!a]x", "bx", LeadingDot::Hidden));
        assert!(m("[]x", "[]x", LeadingDot::Hidden));
    }
}
