//! Small plain inputs shared by the protocol functions.

use std::time::Duration;

use crate::model::Session;

/// A worker as the orchestrator sees it in a planning prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerInfo {
    /// The worker's handle (what `@worker:` names; its session name is accepted too).
    pub name: String,
    /// The model slug.
    pub model: String,
    /// The worker's system prompt, if any; its first line describes the worker.
    pub specialization: Option<String>,
}

impl WorkerInfo {
    pub fn new(name: impl Into<String>, model: impl Into<String>, specialization: Option<String>) -> Self {
        WorkerInfo {
            name: name.into(),
            model: model.into(),
            specialization,
        }
    }

    pub fn from_session(session: &Session) -> Self {
        WorkerInfo {
            name: session.name.clone(),
            model: session.model.clone(),
            specialization: session.system_prompt.clone(),
        }
    }

    /// The first lines of the specialization (up to three non-empty ones, joined with a
    /// space), capped, or `None`.
    pub fn specialization_line(&self) -> Option<String> {
        let lines: Vec<&str> = self
            .specialization
            .as_deref()?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(SPECIALIZATION_LINES)
            .collect();
        if lines.is_empty() {
            return None;
        }
        Some(crate::text::cap_chars(
            &lines.join(" "),
            SPECIALIZATION_LINE_MAX_CHARS,
        ))
    }
}

/// How many lines of a worker's system prompt the planning prompt shows.
pub const SPECIALIZATION_LINES: usize = 3;
/// Longest specialization line shown in a worker list.
pub const SPECIALIZATION_LINE_MAX_CHARS: usize = 300;

/// One worker's outcome in an iteration (or one session's answer in a sequential round).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerResult {
    /// The session name.
    pub name: String,
    pub success: bool,
    pub duration: Duration,
    /// The answer, or the error (and any partial text) for a failed worker.
    pub text: String,
}

impl WorkerResult {
    pub fn status(&self) -> &'static str {
        if self.success { "ok" } else { "failed" }
    }
}

/// A short human duration: `850ms`, `12.3s`, `2m 05s`, `1h 02m`.
pub fn format_duration(d: Duration) -> String {
    ShownDuration(d).to_string()
}

/// [`format_duration`] written where it goes (a prompt's heading per worker), not made apart.
pub struct ShownDuration(pub Duration);

impl std::fmt::Display for ShownDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = self.0;
        let ms = d.as_millis();
        if ms < 1_000 {
            write!(f, "{ms}ms")
        } else if ms < 60_000 {
            write!(f, "{:.1}s", d.as_secs_f64())
        } else if ms < 3_600_000 {
            let secs = d.as_secs();
            write!(f, "{}m {:02}s", secs / 60, secs % 60)
        } else {
            let mins = d.as_secs() / 60;
            write!(f, "{}h {:02}m", mins / 60, mins % 60)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(format_duration(Duration::from_millis(850)), "850ms");
        assert_eq!(format_duration(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(format_duration(Duration::from_secs(125)), "2m 05s");
        assert_eq!(format_duration(Duration::from_secs(3_720)), "1h 02m");
    }

    #[test]
    fn specialization_is_the_first_non_empty_lines() {
        let w = WorkerInfo::new("a", "m", Some("\n  You are a security auditor.  \nMore.".into()));
        assert_eq!(
            w.specialization_line().as_deref(),
            Some("You are a security auditor. More.")
        );
        let long = WorkerInfo::new("a", "m", Some("one\n\ntwo\nthree\nfour".into()));
        assert_eq!(long.specialization_line().as_deref(), Some("one two three"));
        assert_eq!(
            WorkerInfo::new("a", "m", Some("  \n".into())).specialization_line(),
            None
        );
        let long = WorkerInfo::new("a", "m", Some("x".repeat(500)));
        assert_eq!(
            long.specialization_line().unwrap().chars().count(),
            SPECIALIZATION_LINE_MAX_CHARS + 1
        );
    }
}
