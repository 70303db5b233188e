//! A scripted OpenAI-compatible server on loopback: it answers `/chat/completions` from a
//! script (SSE streams, plain JSON, error statuses, garbage, delays) and records every request,
//! so tests assert what the model was sent.

use super::http::{Connection, accept_all};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// SSE events (each a chat.completion.chunk), then `[DONE]`.
    Stream(Vec<Value>),
    Json(Value),
    Status {
        code: u16,
        retry_after: Option<u64>,
    },
    Garbage(String),
    Delayed(Duration, Box<Reply>),
    /// Held until the condition holds (checked every 10 ms, for at most 20 s), then answered.
    Until(Condition, Box<Reply>),
    /// Server-sent events written as given (`event:`/`data:` pairs), for other wire formats.
    RawEvents(Vec<Value>),
}

/// What a held reply waits for (another fake's record, say).
#[derive(Clone)]
pub struct Condition(pub Arc<dyn Fn() -> bool + Send + Sync>);

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Condition")
    }
}

/// A recorded request.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub authorization: Option<String>,
    /// The request head, lowercased (for other headers).
    pub head: String,
    pub body: Value,
    /// The body as text (a multipart upload is not JSON).
    pub raw: String,
}

/// A reply computed from the request's body.
type Responder = Arc<Mutex<Option<Arc<dyn Fn(&Value) -> Reply + Send + Sync>>>>;

pub struct FakeLlm {
    pub url: String,
    script: Arc<Mutex<VecDeque<Reply>>>,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    /// Connections accepted so far (a client that reuses its connections opens few).
    pub connections: Arc<AtomicUsize>,
    /// When set, the command classifier's requests get this verdict instead of a scripted
    /// reply (they are still recorded): for tests whose calls reach it in no fixed order.
    verdict: Arc<Mutex<Option<String>>>,
    /// Answer a transcript with an unpaired tool call or result with OpenAI's 400.
    strict: Arc<std::sync::atomic::AtomicBool>,
    /// When set, answers every request from its body instead of the script.
    responder: Responder,
    /// Cleared by [`FakeLlm::stop_recording`].
    #[allow(dead_code)] // the benchmarks clear it; the tests keep every request
    recording: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A streamed text answer, split into pieces, with usage at the end.
pub fn text(content: &str) -> Reply {
    let mut events: Vec<Value> = content
        .split_inclusive(' ')
        .map(|piece| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": piece}}]}))
        .collect();
    events.push(json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
    events.push(json!({"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7}}));
    Reply::Stream(events)
}

/// A streamed tool call, its arguments split across chunks.
pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
    let mut events = Vec::new();
    for (index, (id, name, args)) in calls.iter().enumerate() {
        events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]}));
        let middle = args.len() / 2;
        let (a, b) = args.split_at(middle);
        for part in [a, b] {
            events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "function": {"arguments": part}}]}}]}));
        }
    }
    events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 20, "completion_tokens": 5}}));
    Reply::Stream(events)
}

impl FakeLlm {
    pub async fn start(script: Vec<Reply>) -> FakeLlm {
        let listener = super::http::listener();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let verdict = Arc::new(Mutex::new(None));
        let strict = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let responder: Responder = Arc::default();
        let recording = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (s, r, v, st, re, rc) = (
            script.clone(),
            requests.clone(),
            verdict.clone(),
            strict.clone(),
            responder.clone(),
            recording.clone(),
        );
        let connections = Arc::new(AtomicUsize::new(0));
        let task = accept_all(listener, connections.clone(), move |mut connection| {
            let (s, r, v, st, re) = (s.clone(), r.clone(), v.clone(), st.clone(), re.clone());
            let rc = rc.clone();
            async move {
                while let Some(request) = connection.next_request().await {
                    if !rc.load(std::sync::atomic::Ordering::Relaxed) {
                        reply_with(&mut connection, next_scripted(&s)).await;
                        continue;
                    }
                    answer(&mut connection, request, &s, &r, &v, &st, &re).await;
                }
            }
        });
        FakeLlm {
            url,
            script,
            requests,
            connections,
            verdict,
            strict,
            responder,
            recording,
            task,
        }
    }

    /// From now on every request is answered from the script without being parsed or
    /// recorded (so `classify_as`, `respond_with` and `reject_unpaired_tool_messages`, which
    /// read the request, no longer apply). For the benchmarks: the fake shares the machine's cores with the client being
    /// measured, and parsing and keeping each request would charge a client that sends more
    /// (tollgate's requests carry tool schemas and the transcript) for the fake's work.
    #[allow(dead_code)] // the benchmarks' only
    pub fn stop_recording(&self) {
        self.recording
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// From now on every request (the classifier's included, unless `classify_as` answers
    /// them) is answered by `reply` from its body: for tests whose sessions run in no fixed
    /// order.
    pub fn respond_with(&self, reply: impl Fn(&Value) -> Reply + Send + Sync + 'static) {
        *self.responder.lock().unwrap() = Some(Arc::new(reply));
    }

    /// From now on, a request whose messages hold a tool result without its call, or a call
    /// without its result, is answered as OpenAI answers it: 400, consuming no scripted reply.
    pub fn reject_unpaired_tool_messages(&self) {
        self.strict.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Answers every classifier request with `verdict` from now on.
    pub fn classify_as(&self, verdict: &str) {
        *self.verdict.lock().unwrap() = Some(verdict.to_string());
    }

    pub fn push(&self, reply: Reply) {
        self.script.lock().unwrap().push_back(reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn answer(
    connection: &mut Connection,
    request: super::http::Request,
    script: &Mutex<VecDeque<Reply>>,
    requests: &Mutex<Vec<Recorded>>,
    verdict: &Mutex<Option<String>>,
    strict: &std::sync::atomic::AtomicBool,
    responder: &Responder,
) {
    let head = request.head.clone();
    let path = request.path();
    let authorization = head.lines().find_map(|l| {
        l.to_lowercase()
            .starts_with("authorization:")
            .then(|| l[14..].trim().to_string())
    });
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let classifying = body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You rate the risk"));
    let fixed_verdict = verdict.lock().unwrap().clone().filter(|_| classifying);
    let recorded_body = body.clone();
    let unpaired = if strict.load(std::sync::atomic::Ordering::SeqCst) {
        unpaired_tool_message(&body)
    } else {
        None
    };
    requests.lock().unwrap().push(Recorded {
        path,
        authorization,
        head: head.to_lowercase(),
        body,
        raw: String::from_utf8_lossy(&request.body).into_owned(),
    });
    if let Some(verdict) = fixed_verdict {
        return reply_with(connection, text(&verdict)).await;
    }
    let computed = responder
        .lock()
        .unwrap()
        .clone()
        .map(|reply| reply(&recorded_body));
    if let Some(reply) = computed {
        return reply_with(connection, reply).await;
    }
    if let Some(problem) = unpaired {
        let error =
            json!({"error": {"message": problem, "type": "invalid_request_error", "code": null}});
        return connection
            .respond(400, "application/json", "", error.to_string().as_bytes())
            .await;
    }
    reply_with(connection, next_scripted(script)).await;
}

/// The script's next reply; a 500 once it has run out.
fn next_scripted(script: &Mutex<VecDeque<Reply>>) -> Reply {
    script.lock().unwrap().pop_front().unwrap_or(Reply::Status {
        code: 500,
        retry_after: None,
    })
}

async fn reply_with(connection: &mut Connection, reply: Reply) {
    let mut reply = reply;
    loop {
        reply = match reply {
            Reply::Delayed(wait, inner) => {
                tokio::time::sleep(wait).await;
                *inner
            }
            Reply::Until(condition, inner) => {
                let start = std::time::Instant::now();
                while !(condition.0)() && start.elapsed() < Duration::from_secs(20) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                *inner
            }
            other => break reply_now(connection, other).await,
        };
    }
}

async fn reply_now(connection: &mut Connection, reply: Reply) {
    let (status, extra, content_type, body) = match reply {
        Reply::Stream(events) => {
            let mut body = String::new();
            for event in events {
                body.push_str(&format!("data: {event}\n\n"));
            }
            body.push_str("data: [DONE]\n\n");
            (200, String::new(), "text/event-stream", body)
        }
        Reply::Json(value) => (200, String::new(), "application/json", value.to_string()),
        Reply::Status { code, retry_after } => (
            code,
            retry_after
                .map(|s| format!("retry-after: {s}\r\n"))
                .unwrap_or_default(),
            "application/json",
            json!({"error": {"message": "scripted failure"}}).to_string(),
        ),
        Reply::Garbage(text) => (
            200,
            String::new(),
            "text/event-stream",
            format!("data: {text}\n\n"),
        ),
        Reply::RawEvents(events) => {
            let mut body = String::new();
            for event in events {
                let kind = event["type"].as_str().unwrap_or("message").to_string();
                body.push_str(&format!("event: {kind}\ndata: {event}\n\n"));
            }
            (200, String::new(), "text/event-stream", body)
        }
        Reply::Delayed(..) | Reply::Until(..) => unreachable!("answered by reply_with"),
    };
    connection
        .respond(status, content_type, &extra, body.as_bytes())
        .await;
}

/// What OpenAI's chat completions API refuses in a transcript: a `tool` message that answers no
/// call of the assistant message before it, or an assistant's call left without its result.
pub fn unpaired_tool_message(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        match message["role"].as_str() {
            Some("tool") => {
                let id = message["tool_call_id"].as_str().unwrap_or("");
                let Some(at) = open.iter().position(|o| o == id) else {
                    return Some(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (tool_call_id {id})."
                    ));
                };
                open.remove(at);
            }
            _ if !open.is_empty() => {
                return Some(format!(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                    open.join(", ")
                ));
            }
            Some("assistant") => {
                open = message["tool_calls"]
                    .as_array()
                    .map(|calls| {
                        calls
                            .iter()
                            .filter_map(|c| c["id"].as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
            }
            _ => {}
        }
    }
    (!open.is_empty()).then(|| {
        format!(
            "tool_call_ids without response messages: {}",
            open.join(", ")
        )
    })
}
