//! A server that echoes the request's headers in its 401 body (some proxies do) must not get
//! the API key or a configured header value into anything huddle writes or prints: stdout
//! (`--events`), stderr, transcripts, run files, the organization or the log. The real binary
//! against the fake server on 127.0.0.1.

use std::path::Path;

use super::fake_llm_server::{FakeLlm, Reply};
use super::headless::text;

const KEY_VAR: &str = "HUDDLE_TEST_ECHOED_KEY";
const KEY: &str = "sk-test-5ecr3tK3y-0123456789abcdef";
const HEADER_VALUE: &str = "gw-token-7f3a9c1e5d2b";

/// Every file under `dir`, as text.
fn all_files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((
                    path.display().to_string(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
            }
        }
    }
    out
}

/// No piece of a secret (12 characters or more) appears in `text`.
fn assert_no_secret(where_: &str, text: &str) {
    for secret in [KEY, HEADER_VALUE] {
        for start in 0..=secret.len() - 12 {
            let piece = &secret[start..start + 12];
            assert!(!text.contains(piece), "{where_} contains `{piece}`:\n{text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_key_never_leaves_the_provider() {
    let llm = FakeLlm::start().await;
    llm.set_default(Reply::EchoHeaders(401));
    for (name, kind, base) in [
        ("gw", "openai", llm.openai_base()),
        ("claude", "anthropic", llm.anthropic_base()),
    ] {
        let home = tempfile::tempdir().unwrap();
        let config = format!(
            "providers:\n  - {{ name: {name}, kind: {kind}, base_url: \"{base}\", api_key_env: {KEY_VAR}, headers: {{ x-gateway-token: \"{HEADER_VALUE}\" }} }}\n"
        );
        std::fs::write(home.path().join("config.yaml"), config).unwrap();
        let model = format!("{name}/m");
        for events in [true, false] {
            let mut args = vec!["run", "--model", model.as_str()];
            if events {
                args.push("--events");
            }
            args.push("hello");
            let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
                .args(&args)
                .env("HUDDLE_HOME", home.path())
                .env("HUDDLE_HOST_IDLE_MS", "0")
                .env(KEY_VAR, KEY)
                .env("HUDDLE_LOG", "huddle=debug")
                .output()
                .await
                .unwrap();
            let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
            assert_ne!(out.status.code(), Some(0), "{kind}: the run failed: {stderr}");
            assert!(
                format!("{stdout}{stderr}").contains("401 from provider"),
                "{kind}: the failure is reported: {stdout}{stderr}"
            );
            assert!(
                format!("{stdout}{stderr}").contains("[redacted]"),
                "{kind}: the echo is shown, redacted: {stdout}{stderr}"
            );
            assert_no_secret(&format!("{kind} stdout"), &stdout);
            assert_no_secret(&format!("{kind} stderr"), &stderr);
        }
        // The host the runs started is gone (its log written, its socket removed).
        super::headless::wait_for_host_exit(home.path());
        let files = all_files(home.path());
        assert!(
            files.iter().any(|(p, _)| p.contains("sessions")),
            "{kind}: a transcript was written"
        );
        for (path, content) in files.iter().filter(|(p, _)| !p.ends_with("config.yaml")) {
            assert_no_secret(path, content);
        }
    }
    // The server really did receive (and echo) both secrets.
    let seen = llm.requests();
    assert!(
        seen.iter()
            .any(|r| r.header("authorization") == Some(&format!("Bearer {KEY}")))
    );
    assert!(seen.iter().any(|r| r.header("x-api-key") == Some(KEY)));
    assert!(
        seen.iter()
            .all(|r| r.header("x-gateway-token") == Some(HEADER_VALUE))
    );
}
