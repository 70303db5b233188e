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
    Glob::new(pattern).matches(text, leading_dot)
}

/// A pattern read once, to be matched against many texts.
///
/// Never exponential: `*` and `?` never cross `/`, so pattern and text are matched component
/// by component, and within a component the classic one-star backtracking matcher is
/// O(pattern × text) at worst (runs of `*` collapse to one, and a component with more fixed
/// characters than the text's cannot match at all).
pub struct Glob<'a> {
    components: Vec<Vec<Token<'a>>>,
}

impl<'a> Glob<'a> {
    #[must_use]
    pub fn new(pattern: &'a [char]) -> Self {
        Glob {
            components: pattern.split(|&c| c == '/').map(tokens).collect(),
        }
    }

    /// Whether the pattern matches all of `text`.
    #[must_use]
    pub fn matches(&self, text: &[char], leading_dot: LeadingDot) -> bool {
        let mut texts = text.split(|&c| c == '/');
        let mut patterns = self.components.iter();
        loop {
            match (patterns.next(), texts.next()) {
                (None, None) => return true,
                (Some(p), Some(t)) => {
                    if !component_match(p, t, leading_dot) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
    }
}

/// One pattern token: a literal, `?`, `*`, or a bracket class.
#[derive(Clone, Copy)]
pub enum Token<'a> {
    Char(char),
    Any,
    Star,
    /// The class body (without `[`, `]` and the negation mark) and whether it is negated.
    Class(&'a [char], bool),
}

fn tokens(pattern: &[char]) -> Vec<Token<'_>> {
    let mut out: Vec<Token<'_>> = Vec::with_capacity(pattern.len());
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            '*' => {
                if !matches!(out.last(), Some(Token::Star)) {
                    out.push(Token::Star);
                }
                i += 1;
            }
            '?' => {
                out.push(Token::Any);
                i += 1;
            }
            '[' => {
                // A `[` without a non-empty class after it is a literal `[`.
                let close = pattern[i + 1..]
                    .iter()
                    .position(|&c| c == ']')
                    .filter(|c| *c > 0);
                match close {
                    Some(close) => {
                        let class = &pattern[i + 1..i + 1 + close];
                        let (negate, class) = match class.first() {
                            Some('!' | '^') => (true, &class[1..]),
                            _ => (false, class),
                        };
                        out.push(Token::Class(class, negate));
                        i += close + 2;
                    }
                    None => {
                        out.push(Token::Char('['));
                        i += 1;
                    }
                }
            }
            c => {
                out.push(Token::Char(c));
                i += 1;
            }
        }
    }
    out
}

fn class_hit(class: &[char], negate: bool, c: char) -> bool {
    let mut hit = false;
    let mut k = 0;
    while k < class.len() {
        if k + 2 < class.len() && class[k + 1] == '-' {
            hit |= class[k] <= c && c <= class[k + 2];
            k += 3;
        } else {
            hit |= class[k] == c;
            k += 1;
        }
    }
    hit != negate
}

/// One path component (no `/` in either).
fn component_match(tokens: &[Token<'_>], text: &[char], leading_dot: LeadingDot) -> bool {
    let fixed = tokens.iter().filter(|t| !matches!(t, Token::Star)).count();
    if fixed > text.len() {
        return false;
    }
    // A leading `.` is matched only by a literal `.` where the shell hides dotfiles.
    if leading_dot == LeadingDot::Hidden
        && text.first() == Some(&'.')
        && !matches!(tokens.first(), Some(Token::Char('.')))
    {
        return false;
    }
    let single = |token: Token<'_>, c: char| match token {
        Token::Char(p) => p == c,
        Token::Any => true,
        Token::Class(class, negate) => class_hit(class, negate, c),
        Token::Star => false,
    };
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < text.len() {
        match tokens.get(pi) {
            Some(Token::Star) => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&token) if single(token, text[ti]) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((star_pi, star_ti)) => {
                    pi = star_pi + 1;
                    ti = star_ti + 1;
                    star = Some((star_pi, star_ti + 1));
                }
                None => return false,
            },
        }
    }
    tokens[pi..].iter().all(|t| matches!(t, Token::Star))
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
        assert!(m("/etc/*/x", "/etc/a/x", LeadingDot::Hidden));
        assert!(!m("/etc/*", "/etc/a/x", LeadingDot::Hidden));
        assert!(m("~/.ssh/*", "~/.ssh/id_rsa", LeadingDot::Hidden));
        assert!(!m("~/*/id_rsa", "~/.ssh/id_rsa", LeadingDot::Hidden));
        assert!(m("a*b*c", "aXXbYYc", LeadingDot::Hidden));
        assert!(!m("a*b*c", "aXXbYY", LeadingDot::Hidden));
        assert!(m("*a", "aaa", LeadingDot::Hidden));
    }

    /// Many stars used to take exponential time; now the answer is immediate either way.
    #[test]
    fn many_stars_are_linear() {
        let pattern = format!("/etc/{}x", "*".repeat(5000));
        assert!(!m(&pattern, "/etc/shadow", LeadingDot::Hidden));
        let pattern = format!("/etc/{}w", "*s".repeat(3000));
        assert!(!m(&pattern, "/etc/shadow", LeadingDot::Hidden));
        let text = "a".repeat(3000);
        let pattern = format!("{}b", "*a".repeat(1000));
        assert!(!m(&pattern, &text, LeadingDot::Matched));
    }
}
