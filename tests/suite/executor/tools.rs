//! The built-in tools through the executor: sandboxed shell commands, big results stored,
//! web tools against a loopback server, bounded inputs and outputs, the offered toolset, and
//! file moves, copies and removals.

use super::{batch, bench, bench_with, call, ws};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tollgate::executor::CallOutcome;
use tollgate::executor::approval::Answer;
use tollgate::store::Store;

#[tokio::test]
async fn approved_shell_commands_run_sandboxed_and_big_results_are_stored() {
    let b = bench_with(false, "tool_timeout_secs = 30\n");
    let go = b.approver.expect("sh");
    go.send(Answer::Approve {
        by: "console:op".into(),
    })
    .unwrap();
    std::fs::write(ws(&b, "big.txt"), "x".repeat(100_000)).unwrap();
    let mut results = batch(
        &b,
        vec![call(
            "sh",
            "execute_command",
            json!({"command": "echo hello > greeting.txt; cat greeting.txt; touch /etc/nope"}),
        )],
    )
    .await;
    // One reply's calls run concurrently: look at what the command made in the next reply.
    results.extend(
        batch(
            &b,
            vec![
                call("big", "read_file", json!({"path": "big.txt"})),
                call("ls", "ls", json!({})),
                call("f", "find", json!({"pattern": "*.txt"})),
                call("g", "grep", json!({"pattern": "hel+o"})),
            ],
        )
        .await,
    );
    assert_eq!(results[0].outcome, CallOutcome::Executed);
    assert!(
        results[0].output.text.contains("hello"),
        "{}",
        results[0].output.text
    );
    assert!(
        results[0].output.text.contains("exit code 1"),
        "touch /etc must fail: {}",
        results[0].output.text
    );
    assert!(!std::path::Path::new("/etc/nope").exists());
    assert!(results[1].output.truncated);
    assert!(
        results[1].output.text.contains("stored as `big`"),
        "{}",
        &results[1].output.text[results[1].output.text.len() - 200..]
    );
    let stored = b
        .store
        .get(
            "tool_results",
            &tollgate::tools::builtin::result_key("console:tester", "big"),
        )
        .unwrap()
        .unwrap();
    assert_eq!(stored.len(), 100_000);
    assert!(
        results[2].output.text.contains("greeting.txt"),
        "{}",
        results[2].output.text
    );
    assert!(
        results[3].output.text.contains("big.txt")
            && results[3].output.text.contains("greeting.txt"),
        "{}",
        results[3].output.text
    );
    assert!(
        results[4].output.text.contains("greeting.txt:1:hello"),
        "{}",
        results[4].output.text
    );
}

/// An HTTP server on `address` (port chosen by the kernel) answering each request with
/// `reply(request)`, a whole response; it records every request it reads.
async fn http_server(
    address: &str,
    reply: impl Fn(&str) -> String + Send + Sync + 'static,
) -> (u16, Arc<Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind((address, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = seen.clone();
    let server = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut buffer = vec![0u8; 65536];
            let n = socket.read(&mut buffer).await.unwrap_or(0);
            let request = String::from_utf8_lossy(&buffer[..n]).into_owned();
            let response = reply(&request);
            record.lock().unwrap().push(request);
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    (port, seen, server)
}

/// A complete response: a status line, headers and `body`.
fn response(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn web_tools_talk_to_a_loopback_server() {
    let b = bench_with(
        false,
        "network_access = true\nprivate_hosts = [\"127.0.0.1\"]",
    );
    let (port, seen, server) = http_server("127.0.0.1", |request| {
        if request.starts_with("GET") {
            response(
                "201 Created",
                "content-type: text/html\r\n",
                "<html><script>x()</script><body><h1>Docs</h1><p>a &amp; b</p></body></html>",
            )
        } else {
            response(
                "201 Created",
                "content-type: application/json\r\n",
                "{\"ok\":true}",
            )
        }
    })
    .await;
    let go = b.approver.expect("post");
    go.send(Answer::Approve {
        by: "console:op".into(),
    })
    .unwrap();
    let results = batch(&b, vec![
        call("get", "web_fetch", json!({"url": format!("http://127.0.0.1:{port}/docs")})),
        call("post", "http_request", json!({"method": "POST", "url": format!("http://127.0.0.1:{port}/api"), "headers": {"x-probe": "1"}, "body": "{\"n\":1}"})),
    ]).await;
    assert_eq!(results[0].output.text, "Docs\na & b", "{:?}", results[0]);
    assert_eq!(
        b.approver.asked_ids(),
        ["post"],
        "POST is high-risk: it asked"
    );
    assert!(
        results[1].output.text.starts_with("HTTP 201"),
        "{:?}",
        results[1]
    );
    let requests = seen.lock().unwrap().clone();
    let post = requests
        .iter()
        .find(|r| r.starts_with("POST /api"))
        .unwrap();
    assert!(
        post.contains("x-probe: 1") && post.ends_with("{\"n\":1}"),
        "{post}"
    );
    server.abort();
}

/// The web tools reach loopback, private and link-local addresses only where the agent lists
/// them: not by a name that resolves there, not by a redirect, not by an address written
/// another way. Server B (127.0.0.1, not listed) must see nothing; server A (127.0.0.2,
/// listed) answers and redirects.
#[tokio::test]
async fn web_tools_reach_no_private_address_the_agent_did_not_list() {
    let b = bench_with(
        false,
        "network_access = true\nprivate_hosts = [\"127.0.0.2\"]",
    );
    let (unlisted, reached, server_b) =
        http_server("127.0.0.1", |_| response("200 OK", "", "internal secret")).await;
    let (listed, asked, server_a) = http_server("127.0.0.2", move |request| {
        let redirect = |to: &str| response("302 Found", &format!("location: {to}\r\n"), "");
        match request.split(' ').nth(1).unwrap_or("") {
            "/to-address" => redirect(&format!("http://127.0.0.1:{unlisted}/secret")),
            "/to-name" => redirect(&format!("http://localhost:{unlisted}/secret")),
            _ => response("200 OK", "", "listed page"),
        }
    })
    .await;
    let fetch = |id: &str, url: String| call(id, "web_fetch", json!({ "url": url }));
    let results = batch(
        &b,
        vec![
            fetch("name", format!("http://localhost:{unlisted}/secret")),
            fetch(
                "redirect-address",
                format!("http://127.0.0.2:{listed}/to-address"),
            ),
            fetch(
                "redirect-name",
                format!("http://127.0.0.2:{listed}/to-name"),
            ),
            fetch(
                "written-otherwise",
                format!("http://127.1:{unlisted}/secret"),
            ),
            fetch("listed", format!("http://127.0.0.2:{listed}/page")),
        ],
    )
    .await;
    let text = |i: usize| results[i].output.text.as_str();
    assert!(
        text(0).contains("`localhost` resolves to a loopback address")
            && text(0).contains("`private_hosts` of [agents.a]")
            && !text(0).contains("127.0.0.1"),
        "{:?}",
        results[0]
    );
    assert!(
        text(1).contains("a redirect was refused: 127.0.0.1 is a loopback address"),
        "{:?}",
        results[1]
    );
    assert!(
        text(2).contains("`localhost` resolves to"),
        "{:?}",
        results[2]
    );
    for refused in &results[..3] {
        assert_eq!(refused.outcome, CallOutcome::Executed, "{refused:?}");
        assert!(refused.output.is_error, "{refused:?}");
    }
    assert!(
        matches!(results[3].outcome, CallOutcome::Denied(_)),
        "{:?}",
        results[3]
    );
    assert!(
        text(3).contains("127.0.0.1 is a loopback address"),
        "{:?}",
        results[3]
    );
    assert_eq!(text(4), "listed page", "{:?}", results[4]);
    assert!(
        reached.lock().unwrap().is_empty(),
        "the unlisted server was reached"
    );
    let asked: Vec<String> = asked
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.lines().next().unwrap_or("").to_string())
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    server_a.abort();
    server_b.abort();
}

#[tokio::test]
async fn huge_inputs_and_outputs_stay_bounded() {
    let b = bench(false);
    let lines: String = (0..20_000).map(|i| format!("match line {i}\n")).collect();
    std::fs::write(ws(&b, "many.txt"), &lines).unwrap();
    let huge = json!({"path": "x", "pad": "z".repeat(2 * 1024 * 1024)});
    let results = batch(
        &b,
        vec![
            call("g", "grep", json!({"pattern": "match", "path": "many.txt"})),
            call("h", "read_file", huge),
            // Its search could not be bounded in time: refused, saying what would fix it.
            call("r", "grep", json!({"pattern": "[a-z]{20000}"})),
        ],
    )
    .await;
    assert!(results[2].output.is_error, "{:?}", results[2]);
    assert!(
        results[2]
            .output
            .text
            .contains("`pattern` is too large once compiled"),
        "{}",
        results[2].output.text
    );
    assert!(
        results[0].output.truncated,
        "grep output over 256 KB is cut and marked"
    );
    assert!(results[0].output.text.len() <= 300 * 1024);
    assert_eq!(results[1].outcome, CallOutcome::Refused);
    assert!(results[1].output.text.contains("the limit is"));
}

#[test]
fn only_the_toolset_is_offered() {
    let b = bench(false);
    let definitions = b.executor.registry.definitions(&b.executor.toolset);
    let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    assert!(names.contains(&"read_file") && names.contains(&"sleeper"));
    assert!(
        !names.contains(&"spawn_subagent"),
        "not in the agent's tools: never offered"
    );
    let read = definitions.iter().find(|d| d.name == "read_file").unwrap();
    assert_eq!(read.parameters["required"], json!(["path"]));
}

/// A file of many gigabytes costs nothing to make (sparse), and a turn reads up to ten at once:
/// `read_file` reads only what it shows, and `cp` refuses past its cap, saying so.
#[tokio::test]
async fn huge_files_are_read_only_as_far_as_shown_and_not_copied() {
    let b = bench(false);
    let huge = std::fs::File::create(ws(&b, "huge.txt")).unwrap();
    std::io::Write::write_all(&mut &huge, "x".repeat(300 * 1024).as_bytes()).unwrap();
    let size: u64 = 3 << 30;
    huge.set_len(size).unwrap();
    b.approver
        .expect("cp")
        .send(Answer::Approve {
            by: "console:op".into(),
        })
        .unwrap();
    let read = batch(
        &b,
        vec![call("r", "read_file", json!({"path": "huge.txt"}))],
    )
    .await;
    assert_eq!(read[0].outcome, CallOutcome::Executed, "{:?}", read[0]);
    // The whole result is stored (the model sees its head): the note is at its end.
    let stored = b
        .store
        .get(
            "tool_results",
            &tollgate::tools::builtin::result_key("console:tester", "r"),
        )
        .unwrap()
        .unwrap();
    let stored = String::from_utf8_lossy(&stored);
    assert!(
        stored.ends_with(&format!("[… {} more bytes not shown]", size - 256 * 1024)),
        "{}",
        &stored[stored.len().saturating_sub(200)..]
    );
    let copied = batch(
        &b,
        vec![call(
            "cp",
            "cp",
            json!({"from": "huge.txt", "to": "copy.txt"}),
        )],
    )
    .await;
    assert!(
        copied[0].output.text.contains(&format!(
            "huge.txt has {size} bytes; cp handles files of up to 64 MiB"
        )),
        "{:?}",
        copied[0]
    );
    assert!(!ws(&b, "copy.txt").exists());
    // grep skips it in a directory and searches its head alone, saying so either way.
    let searched = batch(
        &b,
        vec![
            call("g1", "grep", json!({"pattern": "x"})),
            call("g2", "grep", json!({"pattern": "x", "path": "huge.txt"})),
        ],
    )
    .await;
    let (all, alone) = (&searched[0].output.text, &searched[1].output.text);
    assert!(
        all.starts_with("(no matches)") && all.contains("[1 file(s) over 8 MiB not searched]"),
        "{all}"
    );
    assert!(
        alone.contains("[the file is over 8 MiB: searched only in its first 8 MiB]"),
        "{}",
        &alone[alone.len().saturating_sub(300)..]
    );
}

#[tokio::test]
async fn file_moves_copies_and_removals_happen_where_approved() {
    let b = bench(false);
    std::fs::write(ws(&b, "a.txt"), "A").unwrap();
    for id in ["cp", "mv", "rm"] {
        b.approver
            .expect(id)
            .send(Answer::Approve {
                by: "console:op".into(),
            })
            .unwrap();
    }
    let made = batch(&b, vec![call("mk", "mkdir", json!({"path": "d/e"}))]).await;
    assert_eq!(made[0].outcome, CallOutcome::Executed, "{:?}", made[0]);
    let copied = batch(
        &b,
        vec![call(
            "cp",
            "cp",
            json!({"from": "a.txt", "to": "d/e/b.txt"}),
        )],
    )
    .await;
    assert_eq!(copied[0].outcome, CallOutcome::Executed, "{:?}", copied[0]);
    let moved = batch(
        &b,
        vec![call(
            "mv",
            "mv",
            json!({"from": "d/e/b.txt", "to": "c.txt"}),
        )],
    )
    .await;
    assert_eq!(moved[0].outcome, CallOutcome::Executed, "{:?}", moved[0]);
    let removed = batch(&b, vec![call("rm", "rm", json!({"path": "a.txt"}))]).await;
    assert_eq!(
        removed[0].outcome,
        CallOutcome::Executed,
        "{:?}",
        removed[0]
    );
    assert!(ws(&b, "d/e").is_dir());
    assert_eq!(std::fs::read_to_string(ws(&b, "c.txt")).unwrap(), "A");
    assert!(!ws(&b, "a.txt").exists() && !ws(&b, "d/e/b.txt").exists());
    let info = batch(&b, vec![call("ci", "context_info", json!({}))]).await;
    assert!(
        info[0].output.text.contains("session console:tester"),
        "{}",
        info[0].output.text
    );
}

/// Each path of a move is checked against the path judged for that same argument: two links
/// swapped while the card waited would otherwise run the move the other way round (both
/// paths were judged, each for the other argument).
#[tokio::test]
async fn a_move_whose_links_were_swapped_while_it_waited_runs_nothing() {
    let b = bench(false);
    for (dir, content) in [("d1", "one"), ("d2", "two")] {
        std::fs::create_dir_all(ws(&b, dir)).unwrap();
        std::fs::write(ws(&b, &format!("{dir}/f")), content).unwrap();
    }
    std::os::unix::fs::symlink("d1", ws(&b, "x")).unwrap();
    std::os::unix::fs::symlink("d2", ws(&b, "y")).unwrap();
    let go = b.approver.expect("mv");
    let swap_then_approve = async {
        while !b.approver.asked_ids().contains(&"mv".to_string()) {
            tokio::task::yield_now().await;
        }
        for (link, to) in [("x", "d2"), ("y", "d1")] {
            std::fs::remove_file(ws(&b, link)).unwrap();
            std::os::unix::fs::symlink(to, ws(&b, link)).unwrap();
        }
        go.send(Answer::Approve {
            by: "console:op".into(),
        })
        .unwrap();
    };
    let (moved, ()) = tokio::join!(
        batch(
            &b,
            vec![call("mv", "mv", json!({"from": "x/f", "to": "y/f"}))]
        ),
        swap_then_approve
    );
    assert!(moved[0].output.is_error, "{:?}", moved[0]);
    assert!(
        moved[0]
            .output
            .text
            .contains("not where it pointed when approved"),
        "{:?}",
        moved[0]
    );
    assert_eq!(std::fs::read_to_string(ws(&b, "d1/f")).unwrap(), "one");
    assert_eq!(std::fs::read_to_string(ws(&b, "d2/f")).unwrap(), "two");
}
