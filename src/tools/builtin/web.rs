//! Web tools: both are network effects, so the sandbox denies them without `network_access`.
//! `http_request` is read-only for GET and HEAD, high-risk for anything else.

use super::{Builtin, Plan};
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
                let host = host_of(url).map_err(ToolError::InvalidArguments)?;
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
                let host = host_of(url).map_err(ToolError::InvalidArguments)?;
                if let Some(headers) = args.get("headers").and_then(|h| h.as_object())
                    && let Some((name, _)) = headers.iter().find(|(_, v)| !v.is_string())
                {
                    return Err(ToolError::InvalidArguments(format!(
                        "header `{name}` must be a string"
                    )));
                }
                let tier = if matches!(method, "GET" | "HEAD") {
                    Tier::ReadOnly
                } else {
                    Tier::HighRisk
                };
                Ok(Plan {
                    message: format!("{method} {url}"),
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

/// The host of an http(s) URL.
pub(crate) fn host_of(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("`{url}` is not an http(s) URL"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("`{url}` has no valid host"));
    }
    Ok(host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn hosts() {
        assert_eq!(host_of("https://Example.com/x?y").unwrap(), "example.com");
        assert_eq!(host_of("http://u:p@h:8080/").unwrap(), "h");
        assert_eq!(host_of("http://[::1]:80/").unwrap(), "::1");
        assert!(host_of("ftp://x").is_err());
        assert!(host_of("https:///x").is_err());
    }
}
