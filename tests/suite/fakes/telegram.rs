//! A fake Telegram Bot API on loopback that the real teloxide client talks to. It serves the
//! methods tollgate calls (`GetMe`, `GetWebhookInfo`, `DeleteWebhook`, `GetUpdates` long-poll,
//! `SendMessage`, `EditMessageText`, `EditMessageReplyMarkup`, `AnswerCallbackQuery`,
//! `SendChatAction`, `SetMyCommands`, `SendDocument`, `GetFile` and file downloads), records
//! every call (method and JSON body; multipart bodies as text), queues updates (messages,
//! button presses), and injects faults (Bot API errors such as 429 with `retry_after`, slow
//! answers).

use super::http::{Connection, accept_all, listener};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

#[derive(Default)]
struct State {
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    calls: Vec<(String, Value, Instant)>,
    faults: HashMap<String, VecDeque<Value>>,
    delays: HashMap<String, VecDeque<Duration>>,
    files: HashMap<String, Vec<u8>>,
    /// Downloads held open after their first half, until released.
    held: HashMap<String, Arc<Notify>>,
}

pub struct FakeTelegram {
    pub url: String,
    state: Arc<Mutex<State>>,
    arrived: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeTelegram {
    pub async fn start() -> FakeTelegram {
        let listener = listener();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            next_update: 1,
            next_message: 100,
            ..State::default()
        }));
        let arrived = Arc::new(Notify::new());
        let (shared, notify) = (state.clone(), arrived.clone());
        let task = accept_all(listener, Arc::default(), move |connection| {
            serve(connection, shared.clone(), notify.clone())
        });
        FakeTelegram {
            url,
            state,
            arrived,
            task,
        }
    }

    fn push_update(&self, key: &str, value: Value) -> i64 {
        let mut state = self.state.lock().unwrap();
        let id = state.next_update;
        state.next_update += 1;
        state.updates.push(json!({"update_id": id, key: value}));
        drop(state);
        self.arrived.notify_waiters();
        id
    }

    /// Queues a message update (`message` is the Bot API's Message object).
    pub fn push_message(&self, message: Value) -> i64 {
        self.push_update("message", message)
    }

    /// Queues a press of an inline button on message `message_id` in `chat`.
    pub fn push_press(&self, chat: i64, from: i64, message_id: i64, data: &str) -> i64 {
        let id = format!("cb{}", self.state.lock().unwrap().next_update);
        self.push_update(
            "callback_query",
            json!({
                "id": id,
                "from": {"id": from, "is_bot": false, "first_name": format!("User{from}")},
                "chat_instance": "ci",
                "data": data,
                "message": {
                    "message_id": message_id, "date": 1_700_000_000,
                    "chat": chat_json(chat),
                    "from": {"id": 999, "is_bot": true, "first_name": "Toll"},
                    "text": "card",
                },
            }),
        )
    }

    /// Queues a callback query exactly as given (a press from a bot, without data, without
    /// its message…).
    pub fn push_callback(&self, query: Value) -> i64 {
        self.push_update("callback_query", query)
    }

    /// A file `GetFile` and the download URL serve.
    pub fn add_file(&self, file_id: &str, bytes: Vec<u8>) {
        self.state
            .lock()
            .unwrap()
            .files
            .insert(file_id.to_string(), bytes);
    }

    /// Downloads of `file_id` send half the file, then hold the connection open until
    /// [`FakeTelegram::release_download`]. Each download is recorded as a `download` call.
    pub fn hold_download(&self, file_id: &str) {
        self.state
            .lock()
            .unwrap()
            .held
            .insert(file_id.to_string(), Arc::new(Notify::new()));
    }

    pub fn release_download(&self, file_id: &str) {
        if let Some(gate) = self.state.lock().unwrap().held.remove(file_id) {
            // A stored permit: a download that has not reached its wait yet passes too.
            gate.notify_one();
        }
    }

    /// The next call of `method` fails with this Bot API error body.
    pub fn fail_next(&self, method: &str, error: Value) {
        self.state
            .lock()
            .unwrap()
            .faults
            .entry(method.to_string())
            .or_default()
            .push_back(error);
    }

    /// The next call of `method` is answered only after `delay`.
    pub fn delay_next(&self, method: &str, delay: Duration) {
        self.state
            .lock()
            .unwrap()
            .delays
            .entry(method.to_string())
            .or_default()
            .push_back(delay);
    }

    pub fn calls(&self, method: &str) -> Vec<Value> {
        self.state
            .lock()
            .unwrap()
            .calls
            .iter()
            .filter(|(m, _, _)| m == method)
            .map(|(_, b, _)| b.clone())
            .collect()
    }

    /// Calls of `method` with when they arrived.
    pub fn timed_calls(&self, method: &str) -> Vec<(Value, Instant)> {
        self.state
            .lock()
            .unwrap()
            .calls
            .iter()
            .filter(|(m, _, _)| m == method)
            .map(|(_, b, t)| (b.clone(), *t))
            .collect()
    }

    /// How many calls have been recorded: where a later [`Self::answers_since`] starts.
    #[allow(dead_code)] // The benchmarks' (they share these fakes with the tests).
    pub fn call_count(&self) -> usize {
        self.state.lock().unwrap().calls.len()
    }

    /// When each answer (a `SendMessage` other than the "Working…" progress message) recorded
    /// from call `from` on, to a chat in `chats`, reached the fake. What the benchmarks wait
    /// on: it reads only the calls since `from` and copies no bodies, so looking costs the
    /// benchmark's process about the same whichever bot it measures (a copy of every recorded
    /// call at each look cost more the longer a bot took).
    #[allow(dead_code)] // The benchmarks'.
    pub fn answers_since(&self, from: usize, chats: std::ops::Range<i64>) -> Vec<Instant> {
        let state = self.state.lock().unwrap();
        state
            .calls
            .get(from..)
            .unwrap_or_default()
            .iter()
            .filter(|(m, b, _)| {
                m == "SendMessage"
                    && b["chat_id"].as_i64().is_some_and(|c| chats.contains(&c))
                    && b["text"] != "Working…"
            })
            .map(|(_, _, at)| *at)
            .collect()
    }

    pub fn methods(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .calls
            .iter()
            .map(|(m, _, _)| m.clone())
            .collect()
    }

    /// Texts of every `SendMessage` to `chat`.
    pub fn texts_to(&self, chat: i64) -> Vec<String> {
        self.calls("SendMessage")
            .iter()
            .filter(|b| b["chat_id"].as_i64() == Some(chat) && b.get("_refused").is_none())
            .map(|b| b["text"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// Waits until the `n`th start of a bot (its `GetMe`) is long-polling.
    pub async fn polling(&self, limit: Duration, n: usize) {
        self.wait_for(limit, "polling", |t| {
            let methods = t.methods();
            let starts = methods.iter().filter(|m| *m == "GetMe").count();
            let polling = methods
                .iter()
                .rev()
                .take_while(|m| *m != "GetMe")
                .any(|m| m == "GetUpdates");
            (starts >= n && polling).then_some(())
        })
        .await;
    }

    /// Waits until `check` holds (polling the record), or panics after `limit`.
    pub async fn wait_for<T>(
        &self,
        limit: Duration,
        what: &str,
        check: impl Fn(&FakeTelegram) -> Option<T>,
    ) -> T {
        let start = Instant::now();
        loop {
            if let Some(value) = check(self) {
                return value;
            }
            if start.elapsed() > limit {
                panic!("timed out waiting for {what}; calls: {:?}", self.methods());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn chat_json(chat: i64) -> Value {
    if chat > 0 {
        json!({"id": chat, "type": "private", "first_name": "Ann"})
    } else {
        json!({"id": chat, "type": "supergroup", "title": "Team"})
    }
}

/// A user message as the Bot API sends it.
pub fn user_message(chat: i64, chat_type: &str, from: i64, text: &str) -> Value {
    json!({
        "message_id": 1,
        "date": 1_700_000_000,
        "chat": {"id": chat, "type": chat_type, "first_name": "Ann", "title": "Team"},
        "from": {"id": from, "is_bot": false, "first_name": "Ann"},
        "text": text,
        "entities": mention_entities(text),
    })
}

/// The entities Telegram marks in `text`: a leading `/command` (with its `@bot`) as
/// `bot_command`, and every other `@name` (letters, digits, `_`) as `mention`, with offsets and
/// lengths in UTF-16 code units, as the Bot API counts them.
pub fn mention_entities(text: &str) -> Vec<Value> {
    let mut entities = Vec::new();
    let mut utf16 = 0;
    let mut chars = text.char_indices().peekable();
    if text.starts_with('/') {
        let command: String = text.chars().take_while(|c| !c.is_whitespace()).collect();
        let length: usize = command.chars().map(char::len_utf16).sum();
        entities.push(json!({"type": "bot_command", "offset": 0, "length": length}));
        for _ in 0..command.chars().count() {
            chars.next();
        }
        utf16 = length;
    }
    while let Some((_, c)) = chars.next() {
        if c == '@' {
            let mut length = 1;
            while let Some((_, n)) = chars.peek() {
                if n.is_ascii_alphanumeric() || *n == '_' {
                    length += 1;
                    chars.next();
                } else {
                    break;
                }
            }
            if length > 1 {
                entities.push(json!({"type": "mention", "offset": utf16, "length": length}));
            }
            utf16 += length;
            continue;
        }
        utf16 += c.len_utf16();
    }
    entities
}

async fn serve(mut connection: Connection, state: Arc<Mutex<State>>, arrived: Arc<Notify>) {
    while let Some(request) = connection.next_request().await {
        let path = request.path();
        if let Some(file) = path.strip_prefix("/file/") {
            match download(connection, file, &state).await {
                Some(still_open) => connection = still_open,
                None => return,
            }
            continue;
        }
        let method = path.rsplit('/').next().unwrap_or("").to_string();
        let body: Value = serde_json::from_slice(&request.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&request.body).into_owned()));
        let reply = answer(&state, &arrived, &method, &body).await;
        connection
            .respond(200, "application/json", "", reply.to_string().as_bytes())
            .await;
    }
}

/// A file download: written in two halves, the second held back while the test holds the file,
/// and the connection closed after it (`None`); a file it does not have is a 404 on a
/// connection that stays open.
async fn download(
    mut connection: Connection,
    file: &str,
    state: &Mutex<State>,
) -> Option<Connection> {
    // teloxide sends the file path as one segment (`documents%2FF1`).
    let file = file.replace("%2F", "/");
    let id = file.rsplit('/').next().unwrap_or("").to_string();
    let (bytes, held) = {
        let mut s = state.lock().unwrap();
        s.calls
            .push(("download".into(), json!({"file_id": id}), Instant::now()));
        (s.files.get(&id).cloned(), s.held.get(&id).cloned())
    };
    let Some(bytes) = bytes else {
        connection
            .respond(404, "text/plain", "", b"no such file")
            .await;
        return Some(connection);
    };
    use tokio::io::AsyncWriteExt;
    let mut socket = connection.into_socket();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        bytes.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let half = bytes.len() / 2;
    let _ = socket.write_all(&bytes[..half]).await;
    let _ = socket.flush().await;
    if let Some(gate) = held {
        gate.notified().await;
    }
    let _ = socket.write_all(&bytes[half..]).await;
    let _ = socket.shutdown().await;
    None
}

fn sent_message(id: i64, chat: &Value, text: &Value) -> Value {
    json!({
        "message_id": id, "date": 1_700_000_000,
        "chat": chat_json(chat.as_i64().unwrap_or(1)),
        "from": {"id": 999, "is_bot": true, "first_name": "Toll"},
        "text": text,
    })
}

async fn answer(state: &Arc<Mutex<State>>, arrived: &Notify, method: &str, body: &Value) -> Value {
    let (index, delay) = {
        let mut s = state.lock().unwrap();
        s.calls
            .push((method.to_string(), body.clone(), Instant::now()));
        let index = s.calls.len() - 1;
        if let Some(error) = s.faults.get_mut(method).and_then(VecDeque::pop_front) {
            // A multipart body (a document) is recorded as text: kept beside the mark.
            let body = &mut s.calls[index].1;
            if !body.is_object() {
                *body = json!({ "_raw": body.take() });
            }
            body["_refused"] = json!(true);
            return error;
        }
        if matches!(method, "SendMessage" | "SendDocument") {
            // Numbered when it arrives and recorded with the call, so tests can press a card's
            // buttons by its id, even while its answer is delayed.
            s.next_message += 1;
            let id = s.next_message;
            let body = &mut s.calls[index].1;
            if !body.is_object() {
                // A multipart body (a document) is recorded as text: kept beside its id.
                *body = json!({ "_raw": body.take() });
            }
            if let Value::Object(fields) = body {
                fields.insert("_id".into(), json!(id));
            }
        }
        (
            index,
            s.delays.get_mut(method).and_then(VecDeque::pop_front),
        )
    };
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let ok = |result: Value| json!({"ok": true, "result": result});
    match method {
        "GetMe" => ok(json!({
            "id": 999, "is_bot": true, "first_name": "Toll", "username": "toll_bot",
            "can_join_groups": true, "can_read_all_group_messages": false,
            "supports_inline_queries": false, "can_connect_to_business": false,
            "has_main_web_app": false,
        })),
        "GetWebhookInfo" => {
            ok(json!({"url": "", "has_custom_certificate": false, "pending_update_count": 0}))
        }
        "GetUpdates" => {
            let offset = body["offset"].as_i64().unwrap_or(0);
            // As Telegram does: asking from an offset confirms (forgets) what came before it.
            state
                .lock()
                .unwrap()
                .updates
                .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            let wait = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(2));
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                let notified = arrived.notified();
                let ready: Vec<Value> = {
                    let s = state.lock().unwrap();
                    s.updates
                        .iter()
                        .filter(|u| u["update_id"].as_i64().unwrap_or(0) >= offset)
                        .cloned()
                        .collect()
                };
                if !ready.is_empty() {
                    return ok(Value::Array(ready));
                }
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    return ok(json!([]));
                }
            }
        }
        "SendMessage" | "SendDocument" => {
            let id = state.lock().unwrap().calls[index].1["_id"]
                .as_i64()
                .unwrap_or(1);
            ok(sent_message(id, &body["chat_id"], &body["text"]))
        }
        "EditMessageText" | "EditMessageReplyMarkup" => ok(sent_message(
            body["message_id"].as_i64().unwrap_or(1),
            &body["chat_id"],
            &body["text"],
        )),
        "GetFile" => {
            let id = body["file_id"].as_str().unwrap_or("");
            let size = state.lock().unwrap().files.get(id).map_or(0, Vec::len);
            ok(
                json!({"file_id": id, "file_unique_id": id, "file_size": size, "file_path": format!("documents/{id}")}),
            )
        }
        _ => ok(json!(true)),
    }
}
