//! The fake's gateway: a websocket speaking Discord's gateway protocol, version 10, JSON text
//! frames. HELLO; IDENTIFY → READY; heartbeats → ACK; RESUME → the events the bot missed, then
//! RESUMED (or INVALID_SESSION for a session it does not know). Dispatches are kept in a log
//! with their sequence numbers, so a dropped connection that resumes gets exactly what it
//! missed. Tests can drop the connection or invalidate the session.

use super::{FakeDiscord, State, payloads};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::Message;

#[derive(Default)]
pub struct GatewayState {
    pub url: String,
    /// Every dispatch sent or to send: (sequence, type, data).
    log: Vec<(u64, String, Value)>,
    session: u64,
    /// IDENTIFY payloads received.
    pub identifies: Vec<Value>,
    /// RESUME payloads received.
    pub resumes: Vec<Value>,
    /// Connections that reached READY or RESUMED.
    pub ready: usize,
    drop_connection: bool,
    invalidate: bool,
    /// The heartbeat interval HELLO asks for, in milliseconds (0: Discord's usual 41,250).
    pub heartbeat_ms: u64,
    /// Heartbeats received (each answered with an ACK).
    pub heartbeats: usize,
}

impl GatewayState {
    fn dispatch(&mut self, kind: &str, data: Value) -> u64 {
        let seq = self.log.last().map_or(1, |(s, _, _)| s + 1);
        self.log.push((seq, kind.to_string(), data));
        seq
    }
}

impl FakeDiscord {
    /// Sends a dispatch event to the connected bot (or keeps it for a RESUME).
    pub fn dispatch(&self, kind: &str, data: Value) {
        self.state.lock().unwrap().gateway.dispatch(kind, data);
        self.changed.notify_waiters();
    }

    /// Waits until `n` connections in all reached READY (or RESUMED).
    pub async fn ready(&self, n: usize) {
        self.wait_for(Duration::from_secs(20), "the gateway to be ready", |d| {
            (d.state.lock().unwrap().gateway.ready >= n).then_some(())
        })
        .await;
    }

    /// Closes the connection without a close frame, as a network failure would.
    pub fn drop_connection(&self) {
        self.state.lock().unwrap().gateway.drop_connection = true;
        self.changed.notify_waiters();
    }

    /// Sends INVALID_SESSION (not resumable): the bot must IDENTIFY again.
    pub fn invalidate_session(&self) {
        self.state.lock().unwrap().gateway.invalidate = true;
        self.changed.notify_waiters();
    }

    /// HELLO asks for a heartbeat every `ms` milliseconds (set before the bot connects).
    pub fn set_heartbeat(&self, ms: u64) {
        self.state.lock().unwrap().gateway.heartbeat_ms = ms;
    }

    pub fn heartbeats(&self) -> usize {
        self.state.lock().unwrap().gateway.heartbeats
    }

    pub fn identifies(&self) -> Vec<Value> {
        self.state.lock().unwrap().gateway.identifies.clone()
    }

    pub fn resumes(&self) -> Vec<Value> {
        self.state.lock().unwrap().gateway.resumes.clone()
    }
}

pub async fn serve(listener: TcpListener, state: Arc<Mutex<State>>, changed: Arc<Notify>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            return;
        };
        let (state, changed) = (state.clone(), changed.clone());
        tokio::spawn(async move {
            if let Ok(ws) = tokio_tungstenite::accept_async(socket).await {
                connection(ws, state, changed).await;
            }
        });
    }
}

fn frame(value: Value) -> Message {
    Message::Text(value.to_string())
}

async fn connection(
    ws: tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
) {
    let (mut out, mut incoming) = ws.split();
    let interval = match state.lock().unwrap().gateway.heartbeat_ms {
        0 => 41_250,
        ms => ms,
    };
    let hello = json!({"op": 10, "d": {"heartbeat_interval": interval}, "s": null, "t": null});
    if out.send(frame(hello)).await.is_err() {
        return;
    }
    // The index in the log of the next dispatch to send; none before IDENTIFY or RESUME.
    let mut next: Option<usize> = None;
    // The intents this connection identified with.
    let mut intents: u64 = 0;
    loop {
        let notified = changed.notified();
        let mut pending = Vec::new();
        {
            let mut s = state.lock().unwrap();
            if s.gateway.drop_connection {
                s.gateway.drop_connection = false;
                return;
            }
            if s.gateway.invalidate {
                s.gateway.invalidate = false;
                next = None;
                pending.push(json!({"op": 9, "d": false, "s": null, "t": null}));
            }
            if let Some(from) = next {
                for (seq, kind, data) in &s.gateway.log[from..] {
                    let data = as_delivered(kind, data, intents);
                    pending.push(json!({"op": 0, "s": seq, "t": kind, "d": data}));
                }
                next = Some(s.gateway.log.len());
            }
        }
        for message in pending {
            if out.send(frame(message)).await.is_err() {
                return;
            }
        }
        tokio::select! {
            received = incoming.next() => {
                let Some(Ok(received)) = received else { return };
                let Message::Text(text) = received else { continue };
                let Ok(payload) = serde_json::from_str::<Value>(&text) else { continue };
                if payload["op"] == 2 {
                    intents = payload["d"]["intents"].as_u64().unwrap_or(0);
                }
                let reply = on_payload(&state, &payload, &mut next);
                changed.notify_waiters();
                if let Some(reply) = reply && out.send(frame(reply)).await.is_err() {
                    return;
                }
            }
            _ = notified => {}
            // A wake-up now and then, in case a notification fell between the check and here.
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
}

/// The Message Content intent.
const MESSAGE_CONTENT: u64 = 1 << 15;

/// A dispatch as Discord delivers it to a connection with `intents`: without Message Content,
/// a guild message that neither mentions the bot nor replies to it comes with its content,
/// attachments, embeds and components blanked.
fn as_delivered(kind: &str, data: &Value, intents: u64) -> Value {
    let bot = json!(payloads::BOT.to_string());
    let addressed = data["mentions"]
        .as_array()
        .is_some_and(|m| m.iter().any(|u| u["id"] == bot))
        || data["referenced_message"]["author"]["id"] == bot;
    if kind != "MESSAGE_CREATE"
        || intents & MESSAGE_CONTENT != 0
        || data.get("guild_id").is_none()
        || addressed
    {
        return data.clone();
    }
    let mut blank = data.clone();
    blank["content"] = json!("");
    for key in ["attachments", "embeds", "components"] {
        blank[key] = json!([]);
    }
    blank
}

/// The answer to one payload from the bot, moving `next` for IDENTIFY and RESUME.
fn on_payload(state: &Mutex<State>, payload: &Value, next: &mut Option<usize>) -> Option<Value> {
    let mut s = state.lock().unwrap();
    let gateway = &mut s.gateway;
    match payload["op"].as_u64() {
        Some(1) => {
            gateway.heartbeats += 1;
            Some(json!({"op": 11, "d": null, "s": null, "t": null}))
        }
        Some(2) => {
            gateway.identifies.push(payload["d"].clone());
            gateway.session += 1;
            let session = format!("session-{}", gateway.session);
            let ready = payloads::ready(&session, &gateway.url);
            let at = gateway.log.len();
            gateway.dispatch("READY", ready);
            gateway.ready += 1;
            *next = Some(at);
            None
        }
        Some(6) => {
            gateway.resumes.push(payload["d"].clone());
            let known = payload["d"]["session_id"] == json!(format!("session-{}", gateway.session));
            if !known {
                return Some(json!({"op": 9, "d": false, "s": null, "t": null}));
            }
            let after = payload["d"]["seq"].as_u64().unwrap_or(0);
            let from = gateway
                .log
                .iter()
                .position(|(seq, _, _)| *seq > after)
                .unwrap_or(gateway.log.len());
            gateway.dispatch("RESUMED", json!({}));
            gateway.ready += 1;
            *next = Some(from);
            None
        }
        _ => None,
    }
}
