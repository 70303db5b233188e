//! serve's log: with `--log-format json` (`TOLLGATE_LOG_FORMAT=json`) one JSON object a line,
//! a run's lines carrying its session and run ids, and no secret in any of them; as text, no
//! colour codes outside a terminal.

use super::*;

/// serve's log after a run that logs a warning, started with `env`: the admin never started
/// the bot, so the card falls back to the chat and the run logs why.
async fn log_of_a_run_that_warns(env: &[(&str, String)]) -> String {
    let mut served = Served::new(
        vec![write_call("w1", "x.txt", "x"), text("Ok.")],
        "",
        "approvals_to = \"admins\"",
    )
    .await;
    served.spawn_with(env);
    served.ready(1).await;
    served.telegram.fail_next(
        "SendMessage",
        json!({"ok": false, "error_code": 403, "description": "Forbidden: bot can't initiate conversation with a user"}),
    );
    served.say(USER, "write x.txt");
    let (card_id, card) = served.card(USER, 0).await;
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.wait_text(USER, "Ok.").await;
    served.log()
}

#[tokio::test(flavor = "multi_thread")]
async fn json_logs_carry_the_runs_ids_and_no_secret() {
    let log = log_of_a_run_that_warns(&[("TOLLGATE_LOG_FORMAT", "json".to_string())]).await;
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        lines.iter().any(|l| l["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("serving"))),
        "{log}"
    );
    let in_run = lines
        .iter()
        .find(|l| {
            l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("has not started a chat with the bot"))
        })
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(in_run["span"]["session"], "telegram:10", "{in_run}");
    assert!(
        in_run["span"]["run"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{in_run}"
    );
    assert!(!log.contains(TOKEN) && !log.contains("SECRET-bot-token"));
}

/// Text logs written to a file (or a pipe, or journald) are plain: colour codes are for a
/// terminal, and in a file they bury the words under `\x1b[2m`-style escapes.
#[tokio::test(flavor = "multi_thread")]
async fn text_logs_to_a_file_carry_no_colour_codes() {
    let log = log_of_a_run_that_warns(&[]).await;
    // The run's warning carries the run's span fields too.
    let warning = log
        .lines()
        .find(|l| l.contains("has not started a chat with the bot"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(warning.contains("session=telegram:10"), "{warning}");
    assert!(!log.contains('\u{1b}'), "{log:?}");
}
