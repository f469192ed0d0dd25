//! `huddle mcp`'s resources: a run's result and trace, and a session's transcript, read from the
//! data dir's files (never from anywhere else):
//!
//! - `huddle://runs/{run_id}/result`: the run's answer and outcome (JSON, as `run_result` has it);
//! - `huddle://runs/{run_id}/trace`: its trace tree (JSON, as `huddle trace --json` prints it);
//! - `huddle://sessions/{session_id}/transcript`: a session's messages (JSON).
//!
//! `resources/list` lists the newest [`RECENT_RUNS`] runs and the [`RECENT_TRANSCRIPTS`] most
//! recently written transcripts; the templates reach any run or session the data dir still has.
//! Everything read is untrusted (model output, tool results): every string is cleaned of
//! terminal controls and of what looks like a secret before it is handed out.

use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::Path;

use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::{Value, json};

use crate::config::Paths;
use crate::engine::events::{EventKind, RunRecord};
use crate::host::protocol::RunInfo;
use crate::model::{CycleOutcome, Organization};
use crate::store::{RunFiles, RunOwner, Transcripts};
use crate::text::{sanitize, secrets::redact_secrets};
use crate::trace::{TraceBuilder, render};

/// Runs `resources/list` lists: the newest.
pub const RECENT_RUNS: usize = 50;
/// Transcripts `resources/list` lists: the most recently written.
pub const RECENT_TRANSCRIPTS: usize = 50;
/// A transcript resource holds the messages of at most the last this many bytes of its file
/// (`truncated` says when earlier ones were left out).
pub const TRANSCRIPT_MAX_BYTES: u64 = 4 * 1024 * 1024;

const SCHEME: &str = "huddle://";
const JSON: &str = "application/json";

pub fn result_uri(run_id: &str) -> String {
    format!("{SCHEME}runs/{run_id}/result")
}

pub fn trace_uri(run_id: &str) -> String {
    format!("{SCHEME}runs/{run_id}/trace")
}

pub fn transcript_uri(session_id: &str) -> String {
    format!("{SCHEME}sessions/{session_id}/transcript")
}

/// What a resource URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Named<'a> {
    Result(&'a str),
    Trace(&'a str),
    Transcript(&'a str),
}

fn parse(uri: &str) -> Option<Named<'_>> {
    let rest = uri.strip_prefix(SCHEME)?;
    let mut parts = rest.split('/');
    let named = match (parts.next()?, parts.next()?, parts.next()?) {
        ("runs", id, "result") => Named::Result(id),
        ("runs", id, "trace") => Named::Trace(id),
        ("sessions", id, "transcript") => Named::Transcript(id),
        _ => return None,
    };
    parts.next().is_none().then_some(named)
}

/// The resource templates (`resources/templates/list`).
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(result_uri("{run_id}"), "run-result")
            .with_title("A run's result")
            .with_description(
                "The answer and outcome of a huddle run (run ids: list_runs, run_team, resources/list)",
            )
            .with_mime_type(JSON),
        ResourceTemplate::new(trace_uri("{run_id}"), "run-trace")
            .with_title("A run's trace")
            .with_description(
                "Who did what in a huddle run, nested by execution, with status, duration, tokens, cost and tool calls (as `huddle trace --json`)",
            )
            .with_mime_type(JSON),
        ResourceTemplate::new(transcript_uri("{session_id}"), "session-transcript")
            .with_title("A session's transcript")
            .with_description("The messages of a huddle session (a team member or a chat)")
            .with_mime_type(JSON),
    ]
}

/// One run file: whose it is, its owner's name, its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEntry {
    pub owner: RunOwner,
    /// The group's or the session's name.
    pub name: String,
    pub run_id: String,
}

/// Every run file of the organization's groups and sessions, oldest first (run ids start with
/// their start time).
pub fn run_entries(files: &RunFiles, org: &Organization) -> Vec<RunEntry> {
    let owners = org
        .groups
        .iter()
        .map(|g| (RunOwner::Group(g.id.clone()), &g.name))
        .chain(
            org.sessions
                .iter()
                .map(|s| (RunOwner::Session(s.id.clone()), &s.name)),
        );
    let mut entries: Vec<RunEntry> = owners
        .flat_map(|(owner, name)| {
            files
                .list_of(&owner)
                .unwrap_or_default()
                .into_iter()
                .map(move |run_id| RunEntry {
                    owner: owner.clone(),
                    name: name.clone(),
                    run_id,
                })
        })
        .collect();
    entries.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    entries
}

/// The resources to list: the newest runs' results and traces, the most recent transcripts.
pub fn list(paths: &Paths, org: &Organization) -> Vec<Resource> {
    let files = RunFiles::new(paths.runs_dir());
    let entries = run_entries(&files, org);
    let mut resources = Vec::new();
    for e in entries.iter().rev().take(RECENT_RUNS) {
        let whose = match &e.owner {
            RunOwner::Group(_) => format!("`{}`", e.name),
            RunOwner::Session(_) => format!("session `{}`", e.name),
        };
        resources.push(
            Resource::new(result_uri(&e.run_id), format!("run {} result", e.run_id))
                .with_title(format!("Result of run {} of {whose}", e.run_id))
                .with_mime_type(JSON),
        );
        resources.push(
            Resource::new(trace_uri(&e.run_id), format!("run {} trace", e.run_id))
                .with_title(format!("Trace of run {} of {whose}", e.run_id))
                .with_mime_type(JSON),
        );
    }
    let transcripts = Transcripts::new(paths.sessions_dir());
    let mut written: Vec<(std::time::SystemTime, &crate::model::Session, u64)> = org
        .sessions
        .iter()
        .filter_map(|s| {
            let meta = regular_file_in(transcripts.dir(), &transcripts.path(&s.id).ok()?)?;
            Some((meta.modified().ok()?, s, meta.len()))
        })
        .collect();
    written.sort_by_key(|w| std::cmp::Reverse(w.0));
    for (_, s, len) in written.into_iter().take(RECENT_TRANSCRIPTS) {
        let group = org.group(&s.group_id).map_or("", |g| g.name.as_str());
        resources.push(
            Resource::new(transcript_uri(&s.id), format!("{} transcript", s.name))
                .with_title(format!("Transcript of {} (`{group}`)", s.name))
                .with_mime_type(JSON)
                .with_size(len),
        );
    }
    resources
}

/// The metadata of `path` when it is a regular file (not a link) in `dir`, itself not a link.
fn regular_file_in(dir: &Path, path: &Path) -> Option<std::fs::Metadata> {
    let dir_meta = std::fs::symlink_metadata(dir).ok()?;
    if !dir_meta.is_dir() || path.parent() != Some(dir) {
        return None;
    }
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.file_type().is_file().then_some(meta)
}

/// Reads the resource at `uri`; `going` are the runs the host has now (a run among them has no
/// result yet, and its trace is left going).
pub fn read(
    paths: &Paths,
    org: &Organization,
    going: &[RunInfo],
    uri: &str,
) -> Result<ReadResourceResult, McpError> {
    let not_found = |why: String| McpError::resource_not_found(why, Some(json!({ "uri": uri })));
    let Some(named) = parse(uri) else {
        return Err(not_found(format!(
            "no resource `{uri}`: huddle's are {SCHEME}runs/RUN_ID/result, {SCHEME}runs/RUN_ID/trace and {SCHEME}sessions/SESSION_ID/transcript"
        )));
    };
    let mut value = match named {
        Named::Result(run_id) | Named::Trace(run_id) => {
            let files = RunFiles::new(paths.runs_dir());
            let entries = run_entries(&files, org);
            let entry = entries
                .iter()
                .find(|e| e.run_id == run_id)
                .ok_or_else(|| not_found(format!("no run `{run_id}` (old runs are pruned)")))?;
            let lines = files
                .read_lines_of(&entry.owner, &entry.run_id)
                .map_err(|e| not_found(e.to_string()))?;
            let is_going = going.iter().any(|r| r.run_id == run_id);
            if matches!(named, Named::Result(_)) {
                run_result(entry, &lines, is_going)
            } else {
                run_trace(org, entry, &lines, is_going)
            }
        }
        Named::Transcript(session_id) => {
            let session = org
                .session(session_id)
                .ok_or_else(|| not_found(format!("no session `{session_id}`")))?;
            transcript(paths, org, session).map_err(not_found)?
        }
    };
    clean(&mut value);
    let text =
        serde_json::to_string_pretty(&value).map_err(|e| McpError::internal_error(e.to_string(), None))?;
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type(JSON),
    ]))
}

/// A run's end, as its file has it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RunEnd {
    pub group: Option<String>,
    pub answer: Option<String>,
    /// `None`: the file has no end (the run goes on, or the process running it went away).
    pub outcome: Option<CycleOutcome>,
    pub failed: Option<String>,
}

/// The answer and end of a run file's lines.
pub fn run_end(lines: &[String]) -> RunEnd {
    let mut end = RunEnd::default();
    for line in lines {
        let Ok(record) = serde_json::from_str::<RunRecord>(line) else {
            continue;
        };
        end.group = Some(record.event.group.to_string());
        match record.event.kind {
            EventKind::RunResult { text } => end.answer = Some(text),
            EventKind::RunEnded { outcome, failed, .. } => {
                end.outcome = outcome.or(Some(CycleOutcome::Cancelled));
                end.failed = failed;
            }
            _ => {}
        }
    }
    end
}

fn run_result(entry: &RunEntry, lines: &[String], going: bool) -> Value {
    let end = run_end(lines);
    let state = if going { "running" } else { "ended" };
    let outcome = match end.outcome {
        Some(o) => Some(super::outcome_word(o, end.failed.is_some())),
        None if going => None,
        // A file without its end: the process that ran it went away.
        None => Some("interrupted".to_string()),
    };
    json!({
        "run_id": entry.run_id,
        "group": end.group.unwrap_or_else(|| entry.name.clone()),
        "state": state,
        "outcome": outcome,
        "failed": end.failed,
        "answer": end.answer,
    })
}

fn run_trace(org: &Organization, entry: &RunEntry, lines: &[String], going: bool) -> Value {
    let names = match &entry.owner {
        RunOwner::Group(id) => crate::describe::Names::of_members(org, id),
        RunOwner::Session(_) => crate::describe::Names::default(),
    };
    let trace = TraceBuilder::of_run_file(names, lines, || going);
    serde_json::from_str(&render::json(&trace))
        .unwrap_or_else(|e| json!({ "error": format!("cannot read the trace: {e}") }))
}

/// A session's messages: the last [`TRANSCRIPT_MAX_BYTES`] of its transcript file.
fn transcript(paths: &Paths, org: &Organization, session: &crate::model::Session) -> Result<Value, String> {
    let transcripts = Transcripts::new(paths.sessions_dir());
    let path = transcripts.path(&session.id).map_err(|e| e.to_string())?;
    let group = org.group(&session.group_id).map(|g| g.name.clone());
    let header = |messages: Vec<Value>, truncated: bool| {
        json!({
            "session_id": session.id,
            "session": session.name,
            "group": group,
            "truncated": truncated,
            "messages": messages,
        })
    };
    if std::fs::symlink_metadata(&path).is_err_and(|e| e.kind() == ErrorKind::NotFound) {
        return Ok(header(Vec::new(), false));
    }
    if regular_file_in(transcripts.dir(), &path).is_none() {
        return Err(format!(
            "the transcript of `{}` is not a regular file in the data dir",
            session.name
        ));
    }
    let (text, truncated) = read_tail(&path, TRANSCRIPT_MAX_BYTES).map_err(|e| e.to_string())?;
    let messages = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(Value::is_object)
        .collect();
    Ok(header(messages, truncated))
}

/// The whole lines among the last `max` bytes of a regular file; true when some were left out.
fn read_tail(path: &Path, max: u64) -> std::io::Result<(String, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    // Not through a link, not blocking on a FIFO; then the open file itself must be a file.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let len = meta.len();
    let truncated = len > max;
    if truncated {
        file.seek(SeekFrom::Start(len - max))?;
    }
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if truncated {
        // The first line is cut: it starts before the part read.
        text = text
            .split_once('\n')
            .map(|(_, rest)| rest.to_string())
            .unwrap_or_default();
    }
    Ok((text, truncated))
}

/// Every string in `value` made safe to show and freed of what looks like a secret.
pub fn clean(value: &mut Value) {
    match value {
        Value::String(s) => {
            let cleaned = redact_secrets(&sanitize::display(s));
            if cleaned != *s {
                *s = cleaned;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean),
        Value::Object(map) => map.values_mut().for_each(clean),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_a_run_or_a_session_and_nothing_else() {
        assert_eq!(parse(&result_uri("r1")), Some(Named::Result("r1")));
        assert_eq!(parse(&trace_uri("r1")), Some(Named::Trace("r1")));
        assert_eq!(parse(&transcript_uri("s-1")), Some(Named::Transcript("s-1")));
        for bad in [
            "huddle://runs/r1",
            "huddle://runs/r1/result/x",
            "huddle://runs/r1/answer",
            "file:///etc/passwd",
            "huddle://sessions/s1/trace",
            "",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        for t in templates() {
            assert!(parse(&t.uri_template).is_some(), "{}", t.uri_template);
        }
    }

    #[test]
    fn cleaning_removes_controls_and_secrets_from_every_string() {
        let mut v = json!({
            "a": "fine \u{1b}[31mred\u{1b}[0m",
            "b": ["key sk-proj-abcdefghijklmnopqrstuvwx here", 3],
            "c": {"d": "password: hunter2hunter2"},
        });
        clean(&mut v);
        assert_eq!(v["a"], "fine red");
        assert_eq!(v["b"][0], "key [redacted] here");
        assert_eq!(v["b"][1], 3);
        assert!(!v["c"]["d"].as_str().unwrap().contains("hunter2"), "{v}");
    }

    #[test]
    fn a_long_transcript_is_read_from_its_end_in_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"text\":\"first\"}\n{\"text\":\"second\"}\n{\"text\":\"third\"}\n",
        )
        .unwrap();
        let (all, cut) = read_tail(&path, 1000).unwrap();
        assert!(!cut);
        assert_eq!(all.lines().count(), 3);
        let (tail, cut) = read_tail(&path, 30).unwrap();
        assert!(cut);
        assert_eq!(tail, "{\"text\":\"third\"}\n");
    }

    #[test]
    fn only_regular_files_in_the_folder_itself_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.jsonl");
        std::fs::write(&file, "{}\n").unwrap();
        assert!(regular_file_in(dir.path(), &file).is_some());
        let link = dir.path().join("b.jsonl");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(regular_file_in(dir.path(), &link).is_none(), "a link");
        std::fs::create_dir(dir.path().join("c.jsonl")).unwrap();
        assert!(
            regular_file_in(dir.path(), &dir.path().join("c.jsonl")).is_none(),
            "a folder"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        let other = elsewhere.path().join("a.jsonl");
        std::fs::write(&other, "{}\n").unwrap();
        assert!(regular_file_in(dir.path(), &other).is_none(), "another folder");
    }
}
