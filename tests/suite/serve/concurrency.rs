//! Chats do not wait on each other: one chat's slow download holds back only that chat; and
//! what an agent's sessions share is started once (its MCP servers).

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_held_download_in_one_chat_does_not_hold_back_another() {
    let served = Served::start(vec![], "", "").await;
    served.telegram.add_file("SLOW", vec![b'x'; 64 * 1024]);
    served.telegram.hold_download("SLOW");
    let mut message = user_message(USER, "private", USER, "");
    message.as_object_mut().unwrap().remove("text");
    message["caption"] = json!("here is the file");
    message["document"] = json!({"file_id": "SLOW", "file_unique_id": "U", "file_size": 65536, "file_name": "big.bin"});
    served.telegram.push_message(message);
    served
        .telegram
        .wait_for(WAIT, "the download to start", |t| {
            (!t.calls("download").is_empty()).then_some(())
        })
        .await;

    // While chat 10's file is half-way, chat 11 is answered.
    served.llm.push(text("Hello, Bob."));
    served.say(11, "hello");
    served.wait_text(11, "Hello, Bob.").await;
    assert!(
        served.telegram.texts_to(USER).is_empty(),
        "chat 10 is still waiting for its file"
    );
    assert_eq!(served.llm.requests().len(), 1);

    served.llm.push(text("Got the file."));
    served.telegram.release_download("SLOW");
    served.wait_text(USER, "Got the file.").await;
    let saved = served.path("ws/telegram_10/attachments/big.bin");
    assert_eq!(std::fs::read(saved).unwrap().len(), 64 * 1024);
    let told = served.llm.requests()[1].body["messages"].to_string();
    assert!(told.contains("attachments/big.bin"), "{told}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_sessions_of_one_agent_share_one_mcp_server_process() {
    let fixture = PathBuf::from(env!("CARGO_BIN_EXE_mcp-fixture"));
    let agent_extra = format!(
        "readable_roots = [{:?}]\n[agents.a.tool_approval]\nmcp_fx_instance = \"allow\"\n[agents.a.mcp.fx]\ncommand = {:?}\ntrusted = true\ntier = \"read-only\"\n",
        fixture.parent().unwrap().display().to_string(),
        fixture.display().to_string()
    );
    let instance = || tool_calls(&[("i1", "mcp_fx_instance", "{}")]);
    let served = Served::start(
        vec![instance(), text("First."), instance(), text("Second.")],
        &agent_extra,
        "",
    )
    .await;
    served.say(USER, "which server?");
    served.wait_text(USER, "First.").await;
    served.say(11, "and yours?");
    served.wait_text(11, "Second.").await;
    let requests = served.llm.requests();
    assert_eq!(requests.len(), 4);
    // What the server said to each session, as the model was told it.
    let said = |request: &super::super::fakes::llm::Recorded| -> String {
        let messages = request.body["messages"].as_array().unwrap();
        let result = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .unwrap_or_else(|| panic!("no tool result in {messages:?}"));
        let content = result["content"].to_string();
        let start = content
            .find("fixture-")
            .unwrap_or_else(|| panic!("{content}"));
        content[start..]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .next()
            .unwrap()
            .to_string()
    };
    let (first, second) = (said(&requests[1]), said(&requests[3]));
    assert_eq!(first, second, "one server process answered both sessions");
}
