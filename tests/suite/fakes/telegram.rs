//! A fake Telegram Bot API on loopback that the real teloxide client talks to: it serves the
//! methods the bridge calls, records every call (method and JSON body), queues updates for
//! `getUpdates`, and injects faults (429 with `retry_after`, 400 for bad markup).

use super::http::{read_request, respond};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

#[derive(Default)]
struct State {
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    calls: Vec<(String, Value)>,
    faults: HashMap<String, VecDeque<Value>>,
}

pub struct FakeTelegram {
    pub url: String,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeTelegram {
    pub async fn start() -> FakeTelegram {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            next_update: 1,
            next_message: 100,
            ..State::default()
        }));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let shared = shared.clone();
                tokio::spawn(async move { serve(socket, shared).await });
            }
        });
        FakeTelegram { url, state, task }
    }

    /// Queues a message update (`message` is the Bot API's Message object).
    pub fn push_message(&self, message: Value) {
        let mut state = self.state.lock().unwrap();
        let id = state.next_update;
        state.next_update += 1;
        state
            .updates
            .push(json!({"update_id": id, "message": message}));
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

    pub fn calls(&self, method: &str) -> Vec<Value> {
        self.state
            .lock()
            .unwrap()
            .calls
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, b)| b.clone())
            .collect()
    }

    pub fn methods(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .calls
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
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
    })
}

async fn serve(mut socket: tokio::net::TcpStream, state: Arc<Mutex<State>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let path = request.path();
    let method = path.rsplit('/').next().unwrap_or("").to_string();
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let reply = answer(&state, &method, &body).await;
    respond(&mut socket, 200, "application/json", "", &reply.to_string()).await;
}

async fn answer(state: &Arc<Mutex<State>>, method: &str, body: &Value) -> Value {
    {
        let mut s = state.lock().unwrap();
        s.calls.push((method.to_string(), body.clone()));
        if let Some(error) = s.faults.get_mut(method).and_then(VecDeque::pop_front) {
            return error;
        }
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
            for _ in 0..10 {
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
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            ok(json!([]))
        }
        "SendMessage" => {
            let mut s = state.lock().unwrap();
            s.next_message += 1;
            let id = s.next_message;
            ok(json!({
                "message_id": id, "date": 1_700_000_000,
                "chat": {"id": body["chat_id"], "type": "private", "first_name": "Ann"},
                "from": {"id": 999, "is_bot": true, "first_name": "Toll"},
                "text": body["text"],
            }))
        }
        _ => ok(json!(true)),
    }
}
