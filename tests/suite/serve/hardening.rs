//! What a chat member steering the model tried against a running `serve`, end to end: the
//! control socket from another user namespace, an attachment written through a planted link,
//! the bot token in a card's reason, an "Always" label and a question's choices, and a command
//! whose card would hide what runs (U+202E, CR, ESC).

use super::{ADMIN, Served, TOKEN, USER, WAIT, button};
use crate::suite::fakes::llm::{text, tool_calls};
use crate::suite::fakes::telegram::user_message;
use serde_json::{Value, json};
use std::process::Command;

/// Every string a person reads on a Telegram message: its text and its buttons' labels.
fn shown(message: &Value) -> Vec<String> {
    let mut out = vec![message["text"].as_str().unwrap_or("").to_string()];
    if let Some(rows) = message["reply_markup"]["inline_keyboard"].as_array() {
        for row in rows {
            for b in row.as_array().unwrap() {
                out.push(b["text"].as_str().unwrap().to_string());
            }
        }
    }
    out
}

/// The card in the user's chat whose text holds `needle` (waiting for it): its id and body.
/// Found by content, since an "all N" row may be posted between cards.
async fn card_with(served: &Served, needle: &str) -> (i64, Value) {
    let card = served
        .telegram
        .wait_for(WAIT, needle, |t| {
            t.calls("SendMessage").into_iter().find(|b| {
                b["chat_id"].as_i64() == Some(USER)
                    && b.get("reply_markup").is_some()
                    && b.get("_id").is_some()
                    && b["text"].as_str().unwrap_or("").contains(needle)
            })
        })
        .await;
    (card["_id"].as_i64().unwrap(), card)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_control_socket_refuses_a_process_in_another_user_namespace() {
    let served = Served::start(vec![], "", "").await;
    let add = [
        "allowlist",
        "add",
        "--agent",
        "a",
        "--command",
        "make deploy",
    ];
    // Every sandboxed command runs in a user namespace of its own, with our uid mapped in:
    // from there the socket takes nothing, even with the uid and the path right.
    let refused = Command::new("unshare")
        .args(["--user", "--map-current-user"])
        .arg(env!("CARGO_BIN_EXE_tollgate"))
        .args(add)
        .args(["--config", "tollgate.toml"])
        .current_dir(served.dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("refused this process") && err.contains("another user namespace"),
        "{err}"
    );
    assert!(served.log().contains("the control socket refused a peer"));
    // From the service's own namespace the same command works, so the refusal above is the
    // namespace check, not a broken command.
    let listed = served.tollgate(&["allowlist", "list"]);
    let out = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{out}");
    assert!(!out.contains("make deploy"), "nothing was saved: {out}");
    let added = served.tollgate(&add);
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let listed = served.tollgate(&["allowlist", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("make deploy"));
}

fn document(file_id: &str, name: &str, size: usize) -> Value {
    let mut message = user_message(USER, "private", USER, "");
    message.as_object_mut().unwrap().remove("text");
    message["caption"] = json!("keep this");
    message["document"] = json!({"file_id": file_id, "file_unique_id": file_id, "file_size": size, "file_name": name});
    message
}

#[tokio::test(flavor = "multi_thread")]
async fn attachments_are_never_written_through_a_planted_link() {
    let served = Served::start(vec![text("Saved."), text("Saved again.")], "", "").await;
    let outside = served.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("notes.txt"), "the operator's file").unwrap();
    let session = served.path("ws/telegram_10");
    std::fs::create_dir_all(session.join("attachments")).unwrap();
    // A link at the file's own name: the upload lands beside it, the target is untouched.
    std::os::unix::fs::symlink(
        outside.join("notes.txt"),
        session.join("attachments/notes.txt"),
    )
    .unwrap();
    served.telegram.add_file("F1", b"uploaded body".to_vec());
    served
        .telegram
        .push_message(document("F1", "notes.txt", 13));
    served.wait_text(USER, "Saved.").await;
    assert_eq!(
        std::fs::read_to_string(outside.join("notes.txt")).unwrap(),
        "the operator's file"
    );
    assert_eq!(
        std::fs::read(session.join("attachments/1-notes.txt")).unwrap(),
        b"uploaded body"
    );
    let told = served.llm.requests()[0].body["messages"].to_string();
    assert!(told.contains("attachments/1-notes.txt"), "{told}");

    // The directory itself replaced by a link out: nothing is written, and the user is told.
    std::fs::remove_dir_all(session.join("attachments")).unwrap();
    std::os::unix::fs::symlink(&outside, session.join("attachments")).unwrap();
    served.telegram.add_file("F2", b"second body".to_vec());
    served
        .telegram
        .push_message(document("F2", "report.txt", 11));
    let refusal = served.wait_text(USER, "is a link").await;
    assert!(refusal.contains("report.txt"), "{refusal}");
    assert!(!refusal.contains(outside.to_str().unwrap()), "{refusal}");
    served.wait_text(USER, "Saved again.").await;
    assert!(!outside.join("report.txt").exists());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_never_reaches_a_card_and_cards_show_what_runs() {
    let secret_path = format!("notes-{TOKEN}.txt");
    let bidi = "mytool \"\u{202E}txt.exe\" \"x\ry\u{1b}[2Kz\"";
    let served = Served::start(
        vec![
            tool_calls(&[
                (
                    "c1",
                    "execute_command",
                    &json!({"command": format!("mytool {TOKEN}")}).to_string(),
                ),
                (
                    "c2",
                    "execute_command",
                    &json!({"command": format!("echo hi > {secret_path}")}).to_string(),
                ),
            ]),
            tool_calls(&[(
                "q1",
                "ask_user_question",
                &json!({"question": format!("Use {TOKEN}?"), "choices": [format!("yes, {TOKEN}"), "no"]})
                    .to_string(),
            )]),
            tool_calls(&[("c3", "execute_command", &json!({"command": bidi}).to_string())]),
            text("All done."),
        ],
        "tools = [\"execute_command\", \"ask_user_question\"]\n",
        "",
    )
    .await;
    served.llm.classify_as("high-risk");
    served.say(USER, "go");

    // The token in an "Always: exactly …" label (cut to fit) and in a reason (a redirect's
    // target) and the details of both.
    let mut cards = Vec::new();
    for needle in ["mytool", "redirects output"] {
        let (id, card) = card_with(&served, needle).await;
        served
            .telegram
            .push_press(USER, ADMIN, id, &button(&card, "Deny"));
        cards.push(card);
    }
    let always = shown(&cards[0])
        .into_iter()
        .find(|l| l.starts_with("Always"));
    assert!(
        always.as_deref().is_some_and(|l| l.contains("[redacted]")),
        "{:?}",
        shown(&cards[0])
    );
    assert!(
        shown(&cards[1])[0].contains("it redirects output to `notes-[redacted].txt`"),
        "{:?}",
        shown(&cards[1])
    );

    // The token in a question and its choices.
    let (question_id, question) = card_with(&served, "Use [redacted]?").await;
    let labels = shown(&question);
    assert!(labels.iter().any(|l| l == "yes, [redacted]"), "{labels:?}");
    served
        .telegram
        .push_press(USER, USER, question_id, &button(&question, "no"));

    // A command holding U+202E, CR and ESC: shown escaped, on the card and on its label.
    let (bidi_id, bidi_card) = card_with(&served, "txt.exe").await;
    let fields = shown(&bidi_card);
    for field in &fields {
        assert!(
            !field.contains(['\u{202E}', '\r', '\u{1b}']),
            "a raw control character on the card: {field:?}"
        );
    }
    assert!(
        fields[0].contains("\\u202Etxt.exe") && fields[0].contains("x\\ry\\x1b[2Kz"),
        "{fields:?}"
    );
    served
        .telegram
        .push_press(USER, ADMIN, bidi_id, &button(&bidi_card, "Deny"));
    served.wait_text(USER, "All done.").await;

    // Nothing sent to Telegram, and nothing in the log, holds the token or a piece of it.
    let secret_half = TOKEN.split_once(':').unwrap().1;
    let piece = &secret_half[..10];
    for call in served.telegram.calls("SendMessage") {
        assert!(!call.to_string().contains(piece), "{call}");
    }
    for call in served.telegram.calls("EditMessageText") {
        assert!(!call.to_string().contains(piece), "{call}");
    }
    assert!(!served.log().contains(piece), "{}", served.log());
}

/// A chat's attachments are capped in total (a member sending files as fast as the rate limit
/// allows would otherwise fill the disk every chat's store writes to): past the cap a file is
/// refused with the fix, and nothing is downloaded.
#[tokio::test(flavor = "multi_thread")]
async fn a_chats_attachments_are_capped_in_total() {
    let served = Served::start(vec![text("Nothing saved.")], "", "").await;
    let attachments = served.path("ws/telegram_10/attachments");
    std::fs::create_dir_all(&attachments).unwrap();
    // Sparse: its length counts, no disk is used.
    std::fs::File::create(attachments.join("earlier.bin"))
        .unwrap()
        .set_len(tollgate::serve::attachments::MAX_ATTACHMENTS_BYTES_PER_SESSION - 10)
        .unwrap();
    served
        .telegram
        .add_file("F1", b"more than ten bytes".to_vec());
    served
        .telegram
        .push_message(document("F1", "notes.txt", 19));
    let refusal = served.wait_text(USER, "was not saved").await;
    assert!(
        refusal.contains("notes.txt") && refusal.contains("delete some"),
        "{refusal}"
    );
    served.wait_text(USER, "Nothing saved.").await;
    assert!(!attachments.join("notes.txt").exists());
    assert!(
        served.telegram.calls("GetFile").is_empty(),
        "nothing was downloaded"
    );
}

/// Files are refused while the disk holding the workspaces is nearly full, whatever each
/// session's own cap says: sessions are cheap to open (a Discord mention opens one), and the
/// store shares the disk. The floor is raised past any disk's size here (a `test-support`
/// build's variable), so the real free space is read and found short.
#[tokio::test(flavor = "multi_thread")]
async fn files_are_refused_while_the_disk_is_nearly_full() {
    let mut served = Served::new(vec![text("Nothing saved.")], "", "").await;
    served.spawn_with(&[(
        tollgate::serve::attachments::MIN_FREE_BYTES_ENV,
        u64::MAX.to_string(),
    )]);
    served.ready(1).await;
    served.telegram.add_file("F1", b"a small file".to_vec());
    served
        .telegram
        .push_message(document("F1", "notes.txt", 12));
    let refusal = served.wait_text(USER, "was not saved").await;
    assert!(
        refusal.contains("notes.txt") && refusal.contains("nearly full"),
        "{refusal}"
    );
    served.wait_text(USER, "Nothing saved.").await;
    assert!(!served.path("ws/telegram_10/attachments/notes.txt").exists());
    assert!(
        served.telegram.calls("GetFile").is_empty(),
        "nothing was downloaded"
    );
}

/// A message with files that the full queue would drop is dropped before its files are
/// fetched: a flood of files into a busy chat costs no download, disk or transcription.
#[tokio::test(flavor = "multi_thread")]
async fn files_of_a_message_the_full_queue_drops_are_not_fetched() {
    use crate::suite::fakes::llm::{Condition, Reply};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let release = Arc::new(AtomicBool::new(false));
    let released = release.clone();
    let served = Served::start(
        vec![Reply::Until(
            Condition(Arc::new(move || released.load(Ordering::SeqCst))),
            Box::new(text("First answered.")),
        )],
        "",
        "queue_cap = 2",
    )
    .await;
    served.say(USER, "first");
    served
        .telegram
        .wait_for(WAIT, "the first turn's model request", |_| {
            (!served.llm.requests().is_empty()).then_some(())
        })
        .await;
    served.say(USER, "second");
    served.say(USER, "third");
    served.telegram.add_file("F1", b"file body".to_vec());
    served.telegram.push_message(document("F1", "notes.txt", 9));
    served.wait_text(USER, "messages are already waiting").await;
    assert!(
        served.telegram.calls("GetFile").is_empty(),
        "nothing was downloaded"
    );
    assert!(!served.path("ws/telegram_10/attachments/notes.txt").exists());
    release.store(true, Ordering::SeqCst);
}
