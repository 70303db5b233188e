//! Web tools: both are network effects, so the sandbox denies them without `network_access`.
//! `http_request` is read-only for a GET or HEAD without a body or a method override,
//! high-risk for anything else.

use super::{Builtin, Plan, web_reach};
use crate::policy::effect::Effect;
use crate::policy::tier::Tier;
use crate::tools::args::{ArgKind, optional, required, string};
use crate::tools::tool::ToolError;

const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

pub(super) fn tools() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "web_fetch",
            description: "Fetch a web page and return its text.",
            args: const { &[required("url", ArgKind::String, "http(s) URL")] },
            tier: Tier::ReadOnly,
            long_running: false,
            plan: |args, _| {
                let url = string(args, "url").unwrap_or_default();
                let host = host_of(url)?;
                Ok(Plan {
                    message: format!("fetch {url}"),
                    effects: vec![Effect::Network {
                        url: url.to_string(),
                        host,
                    }],
                    ..Plan::default()
                })
            },
        },
        Builtin {
            name: "http_request",
            description: "Send an HTTP request (method, url, headers, body).",
            args: const {
                &[
                    required("method", ArgKind::OneOf(METHODS), "HTTP method"),
                    required("url", ArgKind::String, "http(s) URL"),
                    optional("headers", ArgKind::Object, "Request headers"),
                    optional("body", ArgKind::String, "Request body"),
                ]
            },
            tier: Tier::HighRisk,
            long_running: false,
            plan: |args, _| {
                let method = string(args, "method").unwrap_or_default();
                let url = string(args, "url").unwrap_or_default();
                let host = host_of(url)?;
                if let Some(headers) = args.get("headers").and_then(|h| h.as_object())
                    && let Some((name, _)) = headers.iter().find(|(_, v)| !v.is_string())
                {
                    return Err(ToolError::InvalidArguments(format!(
                        "header `{name}` must be a string"
                    )));
                }
                let headers = args.get("headers").and_then(|h| h.as_object());
                let body = string(args, "body");
                let tier = if reads_only(method, headers, body) {
                    Tier::ReadOnly
                } else {
                    Tier::HighRisk
                };
                Ok(Plan {
                    message: format!("{method} {url}"),
                    preview: request_preview(headers, body),
                    effects: vec![Effect::Network {
                        url: url.to_string(),
                        host,
                    }],
                    tier: Some(tier),
                    ..Plan::default()
                })
            },
        },
    ]
}

/// Headers that make many servers treat a request as another method (a GET that deletes).
const METHOD_OVERRIDES: &[&str] = &[
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
];

/// Whether a request only reads: a GET or HEAD with no body and no header that overrides its
/// method. Anything else may change something on the server, so it is high-risk.
fn reads_only(
    method: &str,
    headers: Option<&serde_json::Map<String, serde_json::Value>>,
    body: Option<&str>,
) -> bool {
    matches!(method, "GET" | "HEAD")
        && body.is_none_or(str::is_empty)
        && !headers.is_some_and(|h| {
            h.keys()
                .any(|name| METHOD_OVERRIDES.contains(&name.trim().to_ascii_lowercase().as_str()))
        })
}

/// What a request sends beyond its method and URL, for the card: each header on its own
/// line, then the body. A credential header's value is hidden: a card may go to a whole
/// chat, and the admin judges where it goes and that it carries one, not the secret itself.
fn request_preview(
    headers: Option<&serde_json::Map<String, serde_json::Value>>,
    body: Option<&str>,
) -> Option<String> {
    let mut lines: Vec<String> = headers
        .into_iter()
        .flatten()
        .map(|(name, value)| {
            let value = value.as_str().unwrap_or_default();
            if carries_credential(name) {
                format!("{name}: {}", hidden(value))
            } else {
                format!("{name}: {value}")
            }
        })
        .collect();
    if let Some(body) = body.filter(|b| !b.is_empty()) {
        lines.push(String::new());
        lines.push(body.to_string());
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Headers whose value is a credential by the HTTP standards and common APIs. A fixed list:
/// the model names the headers, and a rule by pattern (any name with `auth` or `key` in it)
/// let it hide any payload from the admin under a name like `X-Auth-Payload`.
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-access-token",
    "x-goog-api-key",
    "private-token",
    "x-vault-token",
    "x-amz-security-token",
];

/// Whether a header carries a credential (its value is hidden on the card).
fn carries_credential(name: &str) -> bool {
    CREDENTIAL_HEADERS.contains(&name.trim().to_ascii_lowercase().as_str())
}

/// A credential's value as a card shows it: its scheme (`Bearer`), if it has one, and its
/// length.
fn hidden(value: &str) -> String {
    let (scheme, secret) = match value.trim().split_once(' ') {
        Some((scheme, rest))
            if scheme.len() <= 10 && scheme.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            (format!("{scheme} "), rest)
        }
        _ => (String::new(), value),
    };
    format!("{scheme}‹hidden, {} characters›", secret.chars().count())
}

/// The host of an http(s) URL.
pub(crate) fn host_of(url: &str) -> Result<String, ToolError> {
    url_host(url).map_err(ToolError::InvalidArguments)
}

/// The host as reqwest will connect to it: `http://127.1/` and `http://2130706433/` are
/// `127.0.0.1`, names are lowercased, and an IPv6 address loses its brackets.
fn url_host(url: &str) -> Result<String, String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a valid URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("`{url}` is not an http(s) URL"));
    }
    match parsed.host_str() {
        Some(host) if !host.is_empty() => Ok(host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase()),
        _ => Err(format!("`{url}` has no valid host")),
    }
}

#[cfg(test)]
mod tests {
    use super::{host_of, reads_only, request_preview};
    use serde_json::json;

    /// Only a plain GET or HEAD reads: a body, or a header asking the server for another
    /// method (any case, padded), makes it high-risk.
    #[test]
    fn a_get_reads_only_without_a_body_or_a_method_override() {
        let headers = |h: serde_json::Value| h.as_object().cloned();
        assert!(reads_only("GET", None, None));
        assert!(reads_only(
            "HEAD",
            headers(json!({"Accept": "text/html"})).as_ref(),
            Some("")
        ));
        assert!(!reads_only("POST", None, None));
        assert!(!reads_only("GET", None, Some("{\"delete\": true}")));
        for name in [
            "X-HTTP-Method-Override",
            "x-http-method",
            " X-Method-Override ",
        ] {
            let h = headers(json!({ name: "DELETE" }));
            assert!(!reads_only("GET", h.as_ref(), None), "{name}");
        }
    }

    /// A request's card shows its headers and body; a credential header's value is hidden
    /// (the card may go to the whole chat), its scheme and length kept. Only the standard
    /// credential headers: a name the model made up shows its value.
    #[test]
    fn a_requests_preview_shows_its_headers_and_body_but_not_its_credentials() {
        let h = json!({
            "Authorization": "Bearer sk-live-1234",
            "Cookie": "session=abc",
            "X-Api-Key": "k-99",
            "X-Auth-Payload": "shown",
            "X-Trace": "1"
        });
        assert_eq!(
            request_preview(h.as_object(), Some("payload")).as_deref(),
            Some(
                "Authorization: Bearer ‹hidden, 12 characters›\nCookie: ‹hidden, 11 characters›\nX-Api-Key: ‹hidden, 4 characters›\nX-Auth-Payload: shown\nX-Trace: 1\n\npayload"
            )
        );
        assert_eq!(request_preview(None, None), None);
        assert_eq!(request_preview(None, Some("")), None);
    }

    #[test]
    fn hosts() {
        assert_eq!(host_of("https://Example.com/x?y").unwrap(), "example.com");
        assert_eq!(host_of("http://u:p@h:8080/").unwrap(), "h");
        assert_eq!(host_of("http://[::1]:80/").unwrap(), "::1");
        assert!(host_of("ftp://x").is_err());
        assert!(host_of("http://").is_err());
        assert!(host_of("http://exa mple.com/").is_err());
        // As reqwest reads them: the gate judges the address the request goes to.
        for loopback in [
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f.0.0.1/",
            "http://0177.0.0.1/",
        ] {
            assert_eq!(host_of(loopback).unwrap(), "127.0.0.1", "{loopback}");
        }
        assert_eq!(
            host_of("http://[::ffff:a9fe:a9fe]/").unwrap(),
            "::ffff:a9fe:a9fe"
        );
        // A backslash ends the authority, as in a browser: the host is not what follows `@`.
        assert_eq!(
            host_of("http://example.com\\@127.0.0.1/").unwrap(),
            "example.com"
        );
    }
}

/// Bytes downloaded at most; the rest is not read.
const DOWNLOAD_CAP: usize = 5 * 1024 * 1024;
/// Bytes of text returned to the model.
const TEXT_CAP: usize = 100 * 1024;

/// Runs `web_fetch` or `http_request` (the sandbox current at start is checked again).
pub(super) async fn execute(
    tool: &str,
    call: &crate::tools::approved::ApprovedCall,
    ctx: &crate::tools::exec::ExecContext,
) -> crate::tools::approved::ToolOutput {
    use crate::tools::approved::ToolOutput;
    let args = call.execute_args();
    let url = args
        .get("url")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    if let Some((_, reason)) =
        crate::policy::sandbox::network_denial(ctx.sandbox, ctx.network_access, &ctx.agent, url)
    {
        return ToolOutput::error(format!("the sandbox now refuses this: {reason}"));
    }
    if let Some(refusal) = web_reach::refusal(&ctx.private_hosts, &ctx.agent, url) {
        return ToolOutput::error(refusal);
    }
    let client = match web_reach::client(&ctx.private_hosts, &ctx.agent) {
        Ok(c) => c,
        Err(e) => return ToolOutput::error(format!("could not make an HTTP client: {e}")),
    };
    let method = if tool == "web_fetch" {
        "GET"
    } else {
        args.get("method")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("GET")
    };
    let Ok(method) = reqwest::Method::from_bytes(method.as_bytes()) else {
        return ToolOutput::error(format!("`{method}` is not an HTTP method"));
    };
    let mut request = client.request(method, url);
    if let Some(headers) = args.get("headers").and_then(serde_json::Value::as_object) {
        for (name, value) in headers {
            if let Some(value) = value.as_str() {
                request = request.header(name.as_str(), value);
            }
        }
    }
    if let Some(body) = args.get("body").and_then(serde_json::Value::as_str) {
        request = request.body(body.to_string());
    }
    let mut response = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            return ToolOutput::error(format!(
                "the request to {url} failed: {}",
                web_reach::with_causes(&e)
            ));
        }
    };
    let status = response.status();
    let html = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("html"));
    let mut body = Vec::new();
    let mut cut = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = DOWNLOAD_CAP.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if chunk.len() > room {
                    cut = true;
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                return ToolOutput::error(format!("reading the response from {url} failed: {e}"));
            }
        }
    }
    let raw = String::from_utf8_lossy(&body).into_owned();
    let mut text = if tool == "web_fetch" && html {
        // Up to 5 MB of someone else's page: read off the async threads.
        match crate::tools::blocking::run_blocking(move || html_to_text(&raw)).await {
            Ok(text) => text,
            Err(e) => return ToolOutput::error(format!("reading the page from {url} failed: {e}")),
        }
    } else {
        raw
    };
    if text.len() > TEXT_CAP {
        let mut at = TEXT_CAP;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
        cut = true;
    }
    if cut {
        text.push_str("\n[… truncated]");
    }
    let text = if tool == "web_fetch" {
        text
    } else {
        format!("HTTP {}\n\n{text}", status.as_u16())
    };
    ToolOutput {
        text,
        is_error: !status.is_success(),
        truncated: cut,
    }
}

/// Readable text out of HTML: scripts and styles dropped, tags removed (block tags become line
/// breaks), common entities decoded, blank lines dropped.
#[must_use]
pub fn html_to_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let mut out = String::new();
    let mut i = 0;
    let bytes = html.as_bytes();
    while i < html.len() {
        if bytes[i] == b'<' {
            let rest = &lower[i..];
            if let Some(skipped) = ["script", "style", "noscript", "template"]
                .iter()
                .find(|s| rest.starts_with(&format!("<{s}")))
            {
                let close = format!("</{skipped}");
                i = match rest.find(&close) {
                    Some(at) => lower[i + at..]
                        .find('>')
                        .map_or(html.len(), |gt| i + at + gt + 1),
                    None => html.len(),
                };
                continue;
            }
            let end = lower[i..].find('>').map_or(html.len(), |at| i + at + 1);
            let tag = &lower[i..end];
            let name = tag
                .trim_start_matches(['<', '/'])
                .split(|c: char| !c.is_ascii_alphanumeric())
                .next()
                .unwrap_or("");
            if matches!(
                name,
                "p" | "div"
                    | "br"
                    | "li"
                    | "tr"
                    | "h1"
                    | "h2"
                    | "h3"
                    | "h4"
                    | "h5"
                    | "h6"
                    | "section"
                    | "article"
                    | "header"
                    | "footer"
                    | "pre"
                    | "table"
                    | "ul"
                    | "ol"
            ) {
                out.push('\n');
            }
            i = end;
            continue;
        }
        let next = html[i..].find('<').map_or(html.len(), |at| i + at);
        out.push_str(&decode_entities(&html[i..next]));
        i = next;
    }
    out.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        // Only the next few bytes can close an entity: searching the whole rest for `;` made
        // a page of `&`s cost the square of its size (22 s for 1 MiB, on an async thread).
        let window = &tail.as_bytes()[..tail.len().min(11)];
        let Some(end) = window.iter().position(|&b| b == b';') else {
            out.push('&');
            rest = &tail[1..];
            continue;
        };
        let entity = &tail[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" | "#39" => Some('\''),
            "nbsp" => Some(' '),
            e if e.starts_with("#x") => u32::from_str_radix(&e[2..], 16)
                .ok()
                .and_then(char::from_u32),
            e if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &tail[end + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod html_tests {
    use super::html_to_text;

    #[test]
    fn text_out_of_html() {
        let html = "<html><head><style>p{}</style><script>alert(1)</script></head><body><h1>Title</h1><p>One &amp; two &lt;3</p><p>x&#33;</p></body></html>";
        assert_eq!(html_to_text(html), "Title\nOne & two <3\nx!");
    }

    /// An entity closes within ten bytes of its `&`, or is no entity: a `;` further on is
    /// left alone, and a run of `&`s comes out as it went in.
    #[test]
    fn entities_close_nearby_or_not_at_all() {
        assert_eq!(html_to_text("a &amp; b &#x41; &nbsp;c"), "a & b A c");
        assert_eq!(
            html_to_text("&amp-and-then-much-later; &ampx"),
            "&amp-and-then-much-later; &ampx"
        );
        assert_eq!(html_to_text("&#1234567890;"), "&#1234567890;");
        assert_eq!(html_to_text(&"&".repeat(1000)), "&".repeat(1000));
        assert_eq!(html_to_text("&é;&"), "&é;&");
    }
}
