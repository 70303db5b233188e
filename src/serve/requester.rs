//! Who asks or answers, as a card and the allowlist show it: `telegram:42 (Ann)`. The id is
//! the platform's and comes first; the name is the sender's own choice (a Telegram full name,
//! a Discord display name), and an admin deciding on a call weighs who asks. So the name is
//! shown without digits of any script, brackets of any shape, invisible or control
//! characters: without a digit it cannot show an id, whatever letters or colons imitate the
//! rest (`tеlеgrаm:４２` in Cyrillic and fullwidth), and without brackets it cannot close the
//! parentheses it is shown in and open others.

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
            | '\u{2329}' | '\u{232A}'
            | '\u{2045}' | '\u{2046}'
            | '\u{2308}'..='\u{230B}'
            | '\u{29FC}' | '\u{29FD}'
            | '\u{0F3A}'..='\u{0F3D}'
            | '\u{2E59}'..='\u{2E5C}'
            | '\u{FE47}' | '\u{FE48}'
            | '\u{FF5F}' | '\u{FF60}'
            | '\u{FF62}' | '\u{FF63}'
            | '﴾' | '﴿'
            | '❨'..='❵'
            | '〈'..='】'
            | '〔'..='〛'
            | '⟦'..='⟯'
            | '⦃'..='⦘'
            | '︵'..='﹄'
            | '﹛'..='﹞'
            | '⸢'..='⸩'
    )
}

fn shown_name(display: &str) -> String {
    let name: String = display
        .chars()
        .map(|c| {
            if c.is_numeric() || is_bracket(c) || c.is_control() || is_invisible(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    match name.char_indices().nth(NAME_CHARS) {
        Some((cut, _)) => format!("{}…", &name[..cut]),
        None => name,
    }
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

    /// Names that try to pass for another user's id keep their letters and lose the id.
    #[test]
    fn a_name_cannot_pass_for_an_id() {
        for (display, shown) in [
            ("Ann (discord:1)", "discord:666 (Ann discord:)"),
            ("Ann [telegram: 1]", "discord:666 (Ann telegram:)"),
            ("discord:1", "discord:666 (discord:)"),
            ("Ann2", "discord:666 (Ann)"),
            ("Ann\n(discord:1)", "discord:666 (Ann discord:)"),
            ("Ann （discord：１）", "discord:666 (Ann discord：)"),
            ("Ann ﹙discord ː1﹚", "discord:666 (Ann discord ː)"),
            // Cyrillic letters, mathematical and fullwidth digits.
            ("Ann tеlеgrаm:𝟒２", "discord:666 (Ann tеlеgrаm:)"),
            // Invisible characters and a right-to-left override.
            ("Ann disc\u{2060}ord:1", "discord:666 (Ann disc ord:)"),
            ("Ann \u{202E}discord:1", "discord:666 (Ann discord:)"),
            ("Ann ) · discord:1 (", "discord:666 (Ann · discord:)"),
            ("Ann﴿ telegram:42 ﴾", "discord:666 (Ann telegram:)"),
            ("1234", "discord:666"),
            (
                "Ann ⌈discord:1⌉ ｟x｠ 〈y〉",
                "discord:666 (Ann discord: x y)",
            ),
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
