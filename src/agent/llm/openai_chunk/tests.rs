use super::*;

fn chunk(data: &str) -> Chunk<'_> {
    Chunk::parse(data).unwrap().unwrap()
}

#[test]
fn a_chunk_is_read_with_its_text_borrowed_and_missing_or_null_fields_absent() {
    let data = r#"{"id":"x","object":"chat.completion.chunk","usage":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"hi ","tool_calls":[{"index":1,"id":"c","type":"function","function":{"name":"read_file","arguments":"{\"p\""}}]},"finish_reason":null}]}"#;
    let chunk = chunk(data);
    assert!(chunk.error.is_none() && chunk.usage().is_none());
    let delta = chunk.delta().unwrap();
    assert!(matches!(
        &delta.content,
        Some(Scalar::Text(Cow::Borrowed("hi ")))
    ));
    let call = &delta.tool_calls()[0];
    assert_eq!((call.index(), call.id()), (1, Some("c")));
    assert_eq!(
        (call.name(), call.arguments()),
        (Some("read_file"), Some("{\"p\""))
    );
    // Text with escapes is read into a string of its own.
    let function = call.function.as_ref().unwrap();
    assert!(matches!(
        &function.arguments,
        Some(Scalar::Text(Cow::Owned(_)))
    ));

    let last = self::chunk(r#"{"choices":[],"usage":{"prompt_tokens":11}}"#);
    assert!(last.delta().is_none());
    let usage = last.usage().unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (11, 0));
    let nulls = self::chunk(r#"{"choices":[{"delta":{"content":null,"tool_calls":null}}]}"#);
    let delta = nulls.delta().unwrap();
    assert!(delta.content().is_none() && delta.tool_calls().is_empty());
    assert!(
        self::chunk(r#"{"error":{"message":"overloaded"}}"#)
            .error
            .is_some()
    );
}

/// What the `Value` reader tolerated is still tolerated: a text or number field of another
/// type is absent and the rest of the chunk is read; JSON of another shape is skipped; only
/// text that is not JSON is refused.
#[test]
fn fields_of_another_type_are_read_as_absent_and_the_rest_of_the_chunk_still_counts() {
    // Mistral's reasoning parts, arguments as an object, numbers that are not whole.
    let data = r#"{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]}],"tool_calls":[{"index":-1,"id":7,"function":{"name":"read_file","arguments":{"path":"a"}}},{"index":2.0,"function":{"name":"x"}}]}}],"usage":{"prompt_tokens":12.0,"completion_tokens":true}}"#;
    let chunk = chunk(data);
    let delta = chunk.delta().unwrap();
    assert_eq!(delta.content(), None);
    let calls = delta.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (
            calls[0].index(),
            calls[0].id(),
            calls[0].name(),
            calls[0].arguments()
        ),
        (0, None, Some("read_file"), None)
    );
    assert_eq!((calls[1].index(), calls[1].name()), (0, Some("x")));
    let usage = chunk.usage().unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (0, 0));
    // JSON, but not a chunk: skipped.
    for other in [r#""text""#, "[1]", "3", r#"{"choices":"none"}"#] {
        assert!(Chunk::parse(other).unwrap().is_none(), "{other}");
    }
    // Not JSON: refused.
    assert!(Chunk::parse("{\"choices\": [").is_err());
    assert!(Chunk::parse("not json").is_err());
}
