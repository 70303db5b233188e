//! Who asks or answers, as a card and the allowlist show it: `telegram:42 (Ann)`. The id is
//! the platform's and comes first; the name is the sender's own choice (a Telegram full name,
//! a Discord display name), and an admin deciding on a call weighs who asks, so the name is
//! cleared of what could pass for an id or set one apart: brackets of every shape, `platform:
//! digits` (lookalike colons folded), invisible and control characters.

use tollgate_surface::text::is_invisible;
use tollgate_surface::{Platform, UserRef};

/// Characters of a name shown: enough for any real name, not enough to push what follows off
/// the card's line (a Telegram full name may have 128).
const NAME_CHARS: usize = 64;

/// `platform:id (name)`, or `platform:id` when nothing of the name is left.
#[must_use]
pub fn requester_line(platform: Platform, sender: &UserRef) -> String {
    let id = format!("{}:{}", platform.as_str(), sender.id);
    let name = shown_name(&sender.display);
    if name.is_empty() {
        id
    } else {
        format!("{id} ({name})")
    }
}

/// Opening and closing brackets, the ASCII ones and their lookalikes.
fn is_bracket(c: char) -> bool {
    matches!(
        c,
        '(' | ')'
            | '[' | ']'
            | '{' | '}'
            | '<' | '>'
            | '（' | '）'
            | '［' | '］'
            | '｛' | '｝'
            | '﹙' | '﹚'
            | '⁽' | '⁾'
            | '₍' | '₎'
            | '❨'..='❵'
            | '〈'..='】'
            | '〔'..='〛'
            | '⟦'..='⟯'
            | '⦃'..='⦘'
            | '﹛'..='﹞'
            | '⸢'..='⸩'
    )
}

/// Characters that read as a colon.
fn is_colon_like(c: char) -> bool {
    matches!(
        c,
        '：' | '∶' | '꞉' | '﹕' | 'ː' | '։' | '܃' | '܄' | '᠄' | '⁚' | '︓'
    )
}

fn shown_name(display: &str) -> String {
    let mut name: String = display
        .chars()
        .filter(|&c| !is_bracket(c) && !c.is_control() && !is_invisible(c))
        .map(|c| if is_colon_like(c) { ':' } else { c })
        .collect();
    // Until nothing changes: an id taken out of the middle of another must not join its two
    // halves into a third (`teletelegram:1gram:1`), so each leaves a space behind too.
    loop {
        let before = name.len();
        for platform in [Platform::Telegram, Platform::Discord, Platform::Console] {
            name = without_ids(&name, platform.as_str());
        }
        if name.len() == before {
            break;
        }
    }
    let name: String = name.split_whitespace().collect::<Vec<_>>().join(" ");
    match name.char_indices().nth(NAME_CHARS) {
        Some((cut, _)) => format!("{}…", &name[..cut]),
        None => name,
    }
}

/// `text` with each `prefix:` followed by digits (the prefix in any letter case, spaces
/// allowed around the colon) replaced by a space.
fn without_ids(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find_ignoring_case(rest, prefix) {
        let after = &rest[at + prefix.len()..];
        match id_length(after) {
            Some(length) => {
                out.push_str(&rest[..at]);
                out.push(' ');
                rest = &after[length..];
            }
            None => {
                out.push_str(&rest[..at + prefix.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The length of ` : 123` at the start of `text`, if it starts so.
fn id_length(text: &str) -> Option<usize> {
    let after_colon = text.trim_start().strip_prefix(':')?;
    let digits = after_colon.trim_start();
    let rest = digits.trim_start_matches(|c: char| c.is_ascii_digit());
    (rest.len() < digits.len()).then(|| text.len() - rest.len())
}

/// Where ASCII `needle` starts in `haystack`, letter case ignored.
fn find_ignoring_case(haystack: &str, needle: &str) -> Option<usize> {
    haystack.char_indices().map(|(i, _)| i).find(|&i| {
        haystack
            .get(i..i + needle.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(needle))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(platform: Platform, id: i64, display: &str) -> String {
        let sender = UserRef {
            id,
            display: display.into(),
            is_bot: false,
        };
        requester_line(platform, &sender)
    }

    #[test]
    fn the_platforms_id_comes_first_then_the_name() {
        assert_eq!(
            line(Platform::Telegram, 42, "Ann Lee"),
            "telegram:42 (Ann Lee)"
        );
        assert_eq!(line(Platform::Discord, 7, "  "), "discord:7");
    }

    /// Names that try to pass for another user's id keep their words and lose the id.
    #[test]
    fn a_name_cannot_pass_for_an_id() {
        for (display, shown) in [
            ("Ann (discord:1)", "discord:666 (Ann)"),
            ("Ann discord:1", "discord:666 (Ann)"),
            ("Ann (DISCORD: 1)", "discord:666 (Ann)"),
            ("Ann discord :1", "discord:666 (Ann)"),
            ("Ann [telegram:1]", "discord:666 (Ann)"),
            ("discord:1", "discord:666"),
            ("Ann (console:0) admin", "discord:666 (Ann admin)"),
            ("Ann\n(discord:1)", "discord:666 (Ann)"),
            (
                "discord:x keeps words",
                "discord:666 (discord:x keeps words)",
            ),
            ("Ann discord:1discord:2", "discord:666 (Ann)"),
            ("Ann （discord：1）", "discord:666 (Ann)"),
            ("Ann ﹙discord ː1﹚", "discord:666 (Ann)"),
            // Ids nested in ids, of one platform and of two.
            ("Ann discdiscord:1ord:1", "discord:666 (Ann disc ord:1)"),
            ("Ann discoconsole:5rd:1", "discord:666 (Ann disco rd:1)"),
            // Invisible characters inside the prefix.
            ("Ann disc\u{2060}ord:1", "discord:666 (Ann)"),
            ("Ann \u{202E}discord:1", "discord:666 (Ann)"),
            ("Ann ) · discord:1 (", "discord:666 (Ann ·)"),
        ] {
            assert_eq!(line(Platform::Discord, 666, display), shown, "{display:?}");
        }
    }

    #[test]
    fn a_long_name_is_cut() {
        let shown = line(Platform::Telegram, 9, &"é".repeat(200));
        assert_eq!(shown, format!("telegram:9 ({}…)", "é".repeat(NAME_CHARS)));
    }
}
