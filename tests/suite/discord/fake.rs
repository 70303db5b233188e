//! The fake Discord checked against serenity: every payload it sends reads back through
//! serenity's own types (serenity drops one it cannot read with only a warning, so a fake that
//! drifted would show as a silent hang).

use crate::suite::fakes::discord::payloads::*;
use serde_json::json;
use serenity::model::application::Interaction;
use serenity::model::channel::{GuildChannel, Message};
use serenity::model::gateway::Ready;

#[test]
fn serenity_reads_every_payload_the_fake_sends() {
    let guild = Place::guild(10, 600);
    let mut with_file = message(1, guild, (7, "Ann", &[55]), "<@4000> hi", &[BOT]);
    with_file["attachments"] = json!([attachment(9, "a.txt", 3, "http://x/a.txt")]);
    let mut reply = message(2, Place::dm(900), (7, "Ann", &[]), "more", &[]);
    reply["referenced_message"] = bot_message(3, 900, "earlier");
    for m in [with_file, reply] {
        serde_json::from_value::<Message>(m.clone()).unwrap_or_else(|e| panic!("{e}: {m}"));
    }
    for i in [
        button_press(5, guild, (7, "Ann", &[55]), 100, "v1.abc"),
        button_press(6, Place::dm(900), (7, "Ann", &[]), 100, "v1.abc"),
        select_press(7, guild, (7, "Ann", &[55]), 100, "v1.abc:pick-2"),
        slash_command(8, guild, (7, "Ann", &[]), "mode", Some("high-risk")),
        slash_command(9, Place::dm(900), (7, "Ann", &[]), "status", None),
    ] {
        match serde_json::from_value::<Interaction>(i.clone()) {
            Ok(Interaction::Component(_) | Interaction::Command(_)) => {}
            other => panic!("{other:?}: {i}"),
        }
    }
    for c in [
        channel(600, 0, 10, None, None),
        channel(601, 11, 10, Some(600), Some(BOT)),
    ] {
        serde_json::from_value::<GuildChannel>(c.clone()).unwrap_or_else(|e| panic!("{e}: {c}"));
    }
    serde_json::from_value::<Ready>(ready("s", "ws://x")).unwrap();
}
