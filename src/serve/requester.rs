//! The requester line a card shows admins: `Ann (telegram:42)`. The name is the sender's own
//! choice (a Telegram full name, a Discord display name) and the id is the platform's; an
//! admin deciding on a call weighs who asks, so the name must not be able to pass for an id.

use tollgate_surface::{Platform, UserRef};

/// Characters of a name shown: enough for any real name, not enough to push the id out of
/// the card's line (a Telegram full name may have 128).
const NAME_CHARS: usize = 64;

/// `name (platform:id)`, the name cleared of what could imitate the part after it:
/// parentheses, and `platform:digits` of any platform; just `platform:id` when nothing of the
/// name is left.
#[must_use]
pub fn requester_line(platform: Platform, sender: &UserRef) -> String {
    let name = shown_name(&sender.display);
    let id = format!("{}:{}", platform.as_str(), sender.id);
    if name.is_empty() {
        id
    } else {
        format!("{name} ({id})")
    }
}

fn shown_name(display: &str) -> String {
    let mut name: String = display
        .chars()
        .filter(|c| {
            !matches!(c, '(' | ')' | '[' | ']' | '（' | '）' | '［' | '］') && !c.is_control()
        })
        // Colons that look like one.
        .map(|c| {
            if matches!(c, '：' | '∶' | '꞉' | '﹕') {
                ':'
            } else {
                c
            }
        })
        .collect();
    for platform in [Platform::Telegram, Platform::Discord, Platform::Console] {
        name = without_ids(&name, platform.as_str());
    }
    let name: String = name.split_whitespace().collect::<Vec<_>>().join(" ");
    match name.char_indices().nth(NAME_CHARS) {
        Some((cut, _)) => format!("{}…", &name[..cut]),
        None => name,
    }
}

/// `text` without `prefix:` followed by digits (the prefix in any letter case, spaces allowed
/// after the colon).
fn without_ids(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find_ignoring_case(rest, prefix) {
        let after = &rest[at + prefix.len()..];
        match id_length(after) {
            Some(length) => {
                out.push_str(&rest[..at]);
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

/// The length of `: 123` at the start of `text`, if it starts so.
fn id_length(text: &str) -> Option<usize> {
    let after_colon = text.strip_prefix(':')?;
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
    fn a_name_is_shown_before_the_platforms_id() {
        assert_eq!(
            line(Platform::Telegram, 42, "Ann Lee"),
            "Ann Lee (telegram:42)"
        );
        assert_eq!(line(Platform::Discord, 7, "  "), "discord:7");
    }

    /// Names that try to pass for another user's id keep their words and lose the id.
    #[test]
    fn a_name_cannot_pass_for_an_id() {
        for (display, shown) in [
            ("Ann (discord:1)", "Ann (discord:666)"),
            ("Ann discord:1", "Ann (discord:666)"),
            ("Ann (DISCORD: 1)", "Ann (discord:666)"),
            ("Ann [telegram:1]", "Ann (discord:666)"),
            ("discord:1", "discord:666"),
            ("Ann (console:0) admin", "Ann admin (discord:666)"),
            ("Ann\n(discord:1)", "Ann (discord:666)"),
            (
                "discord:x keeps words",
                "discord:x keeps words (discord:666)",
            ),
            ("Ann discord:1discord:2", "Ann (discord:666)"),
            ("Ann （discord：1）", "Ann (discord:666)"),
        ] {
            assert_eq!(line(Platform::Discord, 666, display), shown, "{display:?}");
        }
    }

    #[test]
    fn a_long_name_is_cut_before_the_id() {
        let shown = line(Platform::Telegram, 9, &"é".repeat(200));
        assert_eq!(shown, format!("{}… (telegram:9)", "é".repeat(NAME_CHARS)));
    }
}
