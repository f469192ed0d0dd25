//! Automatic compaction (issue 24), on the fake LLM server: a session whose model has a small
//! `context_window` has the older part of its conversation summarised by the same model once a
//! request would pass `compact_at` of it; the transcript keeps every message, a notice records
//! the summary, and the conversation read back from disk is what the session goes on sending.

use std::collections::BTreeMap;
use std::time::Duration;

use huddle::engine::EngineOptions;
use huddle::engine::events::EventKind;
use huddle::engine::session::chat_history;
use huddle::model::Mode;

use super::engine_fixture::{self, Fixture};
use super::fake_llm_server::{RecordedRequest, Reply};

const SUMMARY_SYSTEM_START: &str = "You compact a conversation";

fn is_summary(r: &RecordedRequest) -> bool {
    r.json()["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with(SUMMARY_SYSTEM_START))
        || r.json()["system"]
            .as_str()
            .is_some_and(|s| s.starts_with(SUMMARY_SYSTEM_START))
}

fn contents(r: &RecordedRequest) -> Vec<String> {
    r.messages()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

async fn small_window() -> Fixture {
    let options = EngineOptions {
        context_windows: BTreeMap::from([("openai/w-a".to_string(), 1000)]),
        ..EngineOptions::default()
    };
    let f = engine_fixture::team_with(Mode::Sequential, &["a"], false, 1, options).await;
    f.server.set_default(Reply::text(&"answer ".repeat(57)));
    f
}

async fn chat(f: &Fixture, i: usize) {
    let id = f.session_id("t-a");
    let prompt = format!("prompt {i} {}", "word ".repeat(80));
    let result = f.engine.start_chat(&id, prompt, None).expect("registered").await;
    assert!(result.success, "{:?}", result.error);
}

/// The transcript once its last line (the answer to `prompts` prompts) is on disk.
async fn transcript(f: &Fixture, answers: usize) -> Vec<huddle::model::Message> {
    let id = f.session_id("t-a");
    for _ in 0..200 {
        let messages = f.transcripts.load(&id).expect("transcript").messages;
        let answered = messages
            .iter()
            .filter(|m| m.role == huddle::model::MessageRole::Assistant)
            .count();
        if answered >= answers {
            return messages;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the transcript never had {answers} answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_long_conversation_is_compacted_and_read_back_the_same() {
    let mut f = small_window().await;
    for i in 0..10 {
        chat(&f, i).await;
    }
    let requests = f.server.requests_for("w-a");
    let summaries: Vec<usize> = (0..requests.len())
        .filter(|&i| is_summary(&requests[i]))
        .collect();
    assert!(
        summaries.len() >= 2,
        "two compactions in ten turns: {summaries:?}"
    );
    let window_chars = 1000 * 4;
    for (i, r) in requests.iter().enumerate() {
        let chars: usize = contents(r).iter().map(String::len).sum();
        assert!(chars <= window_chars, "request {i}: {chars} chars");
    }
    // The request after a compaction is smaller than the one before it and starts with the
    // summary.
    let first = summaries[0];
    let (before, after) = (&requests[first - 1], &requests[first + 1]);
    let size = |r: &RecordedRequest| contents(r).iter().map(String::len).sum::<usize>();
    assert!(size(after) < size(before), "{} -> {}", size(before), size(after));
    let sent = contents(after);
    assert!(
        sent[0].contains("Summary of the earlier conversation"),
        "{sent:?}"
    );
    assert!(!sent.iter().any(|m| m.starts_with("prompt 0 ")), "{sent:?}");
    // The second compaction folds the first summary and what came after it, never the
    // messages the first one folded.
    let second = contents(&requests[summaries[1]]).join("\n");
    assert!(second.contains("Summary of the earlier conversation"), "{second}");
    assert!(!second.contains("prompt 0 "), "{second}");
    // The events say so.
    let events = f.drain();
    let compacted: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContextCompacted {
                folded,
                before,
                after,
                ..
            } => Some((*folded, *before, *after)),
            _ => None,
        })
        .collect();
    assert_eq!(compacted.len(), summaries.len());
    assert!(compacted.iter().all(|(n, b, a)| *n > 2 && a < b), "{compacted:?}");
    // The transcript keeps every prompt, and notices carrying the summaries.
    let messages = transcript(&f, 10).await;
    for i in 0..10 {
        assert!(
            messages
                .iter()
                .any(|m| m.text.starts_with(&format!("prompt {i} ")))
        );
    }
    assert_eq!(
        messages.iter().filter(|m| m.compacted.is_some()).count(),
        summaries.len()
    );
    // Read back from disk, the conversation is what the session sends next.
    let read_back: Vec<String> = chat_history(&messages)
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    // (The last request and its answer.)
    let last = requests.last().expect("a request");
    assert!(!is_summary(last));
    let mut sent = contents(last);
    sent.push(messages.last().expect("the answer").text.clone());
    assert_eq!(sent, read_back);
}
