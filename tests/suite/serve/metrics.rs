//! `[metrics] listen`: `/healthz` follows the bridge's connection, and `/metrics` counts a turn
//! (message, run, card, approval, tool, model, flushes, live sessions, rate-limit waits) with
//! no user or chat in any label.

use super::*;

/// A loopback port nothing listens on (yet).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET url` until it answers at all: its status and body.
pub async fn get(url: &str) -> (u16, String) {
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        if let Ok(response) = client.get(url).send().await {
            let status = response.status().as_u16();
            return (status, response.text().await.unwrap_or_default());
        }
        assert!(std::time::Instant::now() < deadline, "{url} never answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `GET url` until its status is `want`: the body then.
pub async fn until_status(url: &str, want: u16) -> String {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (status, body) = get(url).await;
        if status == want {
            return body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{url} stayed {status}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The value of the sample `line_start` (a metric name with its labels) in a scrape.
pub fn sample(scrape: &str, line_start: &str) -> f64 {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(line_start)?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no `{line_start}` in\n{scrape}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn healthz_follows_the_bridge_and_metrics_count_a_turn_without_naming_users() {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut served = Served::new(
        vec![
            write_call("w1", "x.txt", "x"),
            text("Ok."),
            Reply::Status {
                code: 400,
                retry_after: None,
            },
        ],
        "",
        &format!("[metrics]\nlisten = \"127.0.0.1:{port}\""),
    )
    .await;
    // The bridge connects only once `getMe` answers: meanwhile the service is up, not ready.
    served.telegram.delay_next("GetMe", Duration::from_secs(3));
    served.spawn();
    let (status, body) = get(&format!("{base}/healthz")).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("starting"), "{body}");
    until_status(&format!("{base}/healthz"), 200).await;
    served.ready(1).await;

    // Three failed polls in a row (one is a blip): not connected until a poll succeeds again.
    for _ in 0..3 {
        served.telegram.fail_next(
            "GetUpdates",
            json!({"ok": false, "error_code": 502, "description": "Bad Gateway"}),
        );
    }
    // The update ends the poll in flight; the next one fails. (A command: no model reply.)
    served
        .telegram
        .push_message(user_message(11, "private", 11, "/help"));
    let down = until_status(&format!("{base}/healthz"), 503).await;
    assert!(down.contains("telegram bridge is not connected"), "{down}");

    // A turn: a card, an admin's approval, the tool, the answer — and one 429 on the way.
    served.telegram.fail_next(
        "SendMessage",
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1}}),
    );
    served.say(USER, "write x.txt");
    let (card_id, card) = served.card(USER, 0).await;
    until_status(&format!("{base}/healthz"), 200).await;
    served
        .telegram
        .push_press(USER, ADMIN, card_id, &button(&card, "Approve"));
    served.wait_text(USER, "Ok.").await;
    served.wait_text(11, "").await;

    let (status, scrape) = get(&format!("{base}/metrics")).await;
    assert_eq!(status, 200, "{scrape}");
    let runs = sample(
        &scrape,
        r#"tollgate_runs_total{agent="a",outcome="completed"}"#,
    );
    assert!(runs >= 1.0, "{scrape}");
    // Each series counted what happened: one message queued, one command, one card, one
    // approval, one write, two model calls, two live sessions, one 429 waited out.
    for (series, want) in [
        (
            r#"tollgate_messages_total{platform="telegram",agent="a",outcome="queued"}"#,
            1.0,
        ),
        (
            r#"tollgate_messages_total{platform="telegram",agent="a",outcome="command"}"#,
            1.0,
        ),
        (r#"tollgate_approval_requests_total{agent="a"}"#, 1.0),
        (
            r#"tollgate_approvals_total{agent="a",outcome="granted",source="admin"}"#,
            1.0,
        ),
        (
            r#"tollgate_tool_seconds_count{agent="a",tool="write_file",outcome="completed"}"#,
            1.0,
        ),
        (
            r#"tollgate_model_request_seconds_count{agent="a",purpose="agent"}"#,
            2.0,
        ),
        (r#"tollgate_live_sessions{platform="telegram"}"#, 2.0),
        (
            r#"tollgate_platform_rate_limit_waits_total{platform="telegram"}"#,
            1.0,
        ),
    ] {
        assert_eq!(sample(&scrape, series), want, "{series}");
    }
    assert!(
        sample(
            &scrape,
            r#"tollgate_model_tokens_total{agent="a",purpose="agent",direction="input"}"#
        ) > 0.0
    );
    assert!(sample(&scrape, "tollgate_store_flush_seconds_count") > 0.0);
    // Never who: no user id, chat id or name in any label.
    for who in [USER.to_string(), "11".to_string(), ADMIN.to_string()] {
        assert!(
            !scrape.contains(&format!("\"{who}\"")) && !scrape.contains(&format!(":{who}")),
            "{who} named in\n{scrape}"
        );
    }
    let (status, _) = get(&format!("{base}/nothing")).await;
    assert_eq!(status, 404);

    // A model call that fails is counted, and its run as interrupted.
    served
        .telegram
        .push_message(user_message(11, "private", 11, "hi"));
    let deadline = std::time::Instant::now() + WAIT;
    let scrape = loop {
        let (_, scrape) = get(&format!("{base}/metrics")).await;
        if scrape.contains(r#"tollgate_runs_total{agent="a",outcome="interrupted"}"#) {
            break scrape;
        }
        assert!(std::time::Instant::now() < deadline, "{scrape}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        sample(
            &scrape,
            r#"tollgate_model_errors_total{agent="a",purpose="agent"}"#
        ),
        1.0
    );
}
