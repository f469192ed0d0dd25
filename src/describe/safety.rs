//! The sandbox and hooks: a call a hook denied, a hook's objection or failure, a process the
//! sandbox did not start or stopped.

use super::{Line, Tone, quote};

/// `⛔ dev: hook `guard.sh` denied `git__git_push`: no pushes on Fridays`, or for a later
/// event `⛔ dev: turn_finished hook `tests.sh` objected: 2 tests fail`.
pub fn hook_blocked(
    session: Option<&str>,
    hook_event: &str,
    hook: &str,
    tool: Option<&str>,
    reason: &str,
) -> Line {
    let what = match (hook_event, tool) {
        ("pre_tool_use", Some(tool)) => format!("hook `{hook}` denied `{tool}`"),
        (event, Some(tool)) => format!("{event} hook `{hook}` objected to `{tool}`"),
        (event, None) => format!("{event} hook `{hook}` objected"),
    };
    Line::new(Tone::Bad, format!("⛔ {}{what}: {}", who(session), quote(reason)))
}

/// `! dev: pre_tool_use hook `guard.sh` timed out after 30s and was stopped` (it blocked
/// nothing).
pub fn hook_failed(session: Option<&str>, hook_event: &str, message: &str) -> Line {
    Line::new(
        Tone::Warn,
        format!("! {}{hook_event}: {}", who(session), quote(message)),
    )
}

/// `⛔ dev: agent claude not started: the sandbox is required (…) but not available: …`.
pub fn sandbox_refused(session: Option<&str>, what: &str, reason: &str) -> Line {
    Line::new(
        Tone::Bad,
        format!("⛔ {}{what} not started: {}", who(session), quote(reason)),
    )
}

/// `⛔ dev: the sandbox stopped agent claude: touch: cannot touch '/home/u/x': Read-only file
/// system`.
pub fn sandbox_denied(session: Option<&str>, what: &str, detail: &str) -> Line {
    Line::new(
        Tone::Bad,
        format!("⛔ {}the sandbox stopped {what}: {}", who(session), quote(detail)),
    )
}

/// The transcript's notice of what a program said its sandbox stopped (`what`: `agent
/// claude`): `the sandbox stopped agent claude: touch: cannot touch '/home/u/x': Read-only
/// file system`, a line for each.
pub fn sandbox_denied_notice(what: &str, details: &[String]) -> String {
    details
        .iter()
        .map(|d| format!("the sandbox stopped {what}: {}", quote(d)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The transcript's notice of a tool server its required sandbox kept from starting (`problem`:
/// huddle's own words, whole): `tool server `git` could not start: the sandbox is required (…)
/// but not available: … (its tools were not offered)`.
pub fn tool_server_refused_notice(problem: &str) -> String {
    format!("{} (its tools were not offered)", problem.trim_end())
}

/// The reason a `pre_tool_use` hook with `on_error: deny` that could not run (`error`: its
/// hook error) gives for the call it denies.
/// The warning of a run whose agent goes unconfined because no sandbox works here (none was
/// required): said once per run, so that it is never silent where no header shows it.
pub fn unconfined_warning(what: &str, why: &str) -> String {
    format!(
        "{what} runs unconfined: no sandbox works here ({why}); set `sandbox: {{ mode: workspace-write }}` to refuse instead, `huddle doctor` says more"
    )
}

pub fn guard_could_not_run(error: &str) -> String {
    format!("the guard hook could not run, and it denies what it cannot check (on_error: deny): {error}")
}

fn who(session: Option<&str>) -> String {
    session.map(|s| format!("{s}: ")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_read_as_one_line() {
        let line = hook_blocked(
            Some("dev"),
            "pre_tool_use",
            "guard.sh",
            Some("time__get_current_time"),
            "no clocks today\nmore",
        );
        assert_eq!(
            (line.text.as_str(), line.tone),
            (
                "⛔ dev: hook `guard.sh` denied `time__get_current_time`: no clocks today",
                Tone::Bad
            )
        );
        assert_eq!(
            hook_blocked(None, "run_finished", "notify", None, "late").text,
            "⛔ run_finished hook `notify` objected: late"
        );
        assert_eq!(
            sandbox_refused(
                None,
                "agent claude",
                "the sandbox is required (workspace-write) but not available: bwrap not found"
            )
            .text,
            "⛔ agent claude not started: the sandbox is required (workspace-write) but not available: bwrap not found"
        );
        let failed = hook_failed(
            Some("dev"),
            "pre_tool_use",
            "hook `x` timed out after 1s and was stopped",
        );
        assert_eq!(failed.tone, Tone::Warn);
        assert_eq!(
            failed.text,
            "! dev: pre_tool_use: hook `x` timed out after 1s and was stopped"
        );
    }
}
