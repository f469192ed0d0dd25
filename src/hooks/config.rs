//! The `hooks:` block (config.yaml, a preset's team or member): per event, a list of commands,
//! shaped like Claude Code's hooks so scripts port with little change.
//!
//! ```yaml
//! hooks:
//!   pre_tool_use:
//!     - matcher: "git__.*|time__.*"        # regex over tool names, whole name; absent or "*": all
//!       command: ["/home/me/bin/guard.sh"] # program and arguments, no shell
//!       timeout_secs: 30                   # default 60
//!   iteration_finished:
//!     - command: ["sh", "-c", "cargo test 2>&1 | tail -40"]
//! ```

use serde::{Deserialize, Serialize};

use crate::sandbox::SandboxSettings;

/// A hook's time limit when it sets none.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// Before a tool call runs: may allow, deny (the reason is the call's result) or ask.
    PreToolUse,
    /// After a tool call ran: sees the call and its result; may give the model feedback.
    PostToolUse,
    /// A member's turn ended.
    TurnFinished,
    /// A team's iteration ended: its output goes to the evaluator with the workers' results.
    IterationFinished,
    /// A run ended (any outcome).
    RunFinished,
    /// A member's git worktree was made (copy `.env`, install dependencies).
    WorktreeCreated,
}

impl HookEvent {
    pub const ALL: [HookEvent; 6] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::TurnFinished,
        HookEvent::IterationFinished,
        HookEvent::RunFinished,
        HookEvent::WorktreeCreated,
    ];

    /// The config key (`pre_tool_use`).
    pub fn key(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "pre_tool_use",
            HookEvent::PostToolUse => "post_tool_use",
            HookEvent::TurnFinished => "turn_finished",
            HookEvent::IterationFinished => "iteration_finished",
            HookEvent::RunFinished => "run_finished",
            HookEvent::WorktreeCreated => "worktree_created",
        }
    }

    /// `hook_event_name` in the input: Claude Code's spelling for the events it has too.
    pub fn wire_name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::TurnFinished => "TurnFinished",
            HookEvent::IterationFinished => "IterationFinished",
            HookEvent::RunFinished => "RunFinished",
            HookEvent::WorktreeCreated => "WorktreeCreated",
        }
    }

    /// Only tool events read a matcher.
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// One hook: a command run with the event as JSON on stdin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// Tool events only: a regular expression the whole tool name must match (`git__.*`,
    /// `time__get_current_time|shell`); absent, empty or `*`: every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// Program and arguments, run without a shell (write `["sh", "-c", "…"]` for one).
    pub command: Vec<String>,
    /// Seconds before the hook is killed (a non-blocking error). Default 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// The hook's own sandbox settings, over those of the session it runs for.
    #[serde(default, skip_serializing_if = "SandboxSettings::is_empty")]
    pub sandbox: SandboxSettings,
    /// pre_tool_use only: what a hook that could not run (missing program, refused sandbox,
    /// timeout, another exit, JSON that cannot be read) means for the call. Default `continue`
    /// (a reported error that blocks nothing, as in Claude Code); `deny` refuses the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
    /// `matcher` compiled, on its first use (a hook is asked about every tool call).
    #[serde(skip)]
    pub(crate) compiled: CompiledMatcher,
}

/// What a `pre_tool_use` hook that could not run means for the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Reported; the call goes on.
    Continue,
    /// Reported; the call is denied.
    Deny,
}

/// A matcher's regular expression, compiled once; `None` inside: it is not valid. Not part of
/// what a hook is (two hooks are equal whatever was compiled).
#[derive(Debug, Clone, Default)]
pub(crate) struct CompiledMatcher(std::sync::OnceLock<Option<regex::Regex>>);

impl PartialEq for CompiledMatcher {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for CompiledMatcher {}

impl Hook {
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1))
    }

    /// True when the hook applies to a call of `tool`. A matcher that is not a valid regular
    /// expression (validation refuses those; one could come from an edited file) matches
    /// every tool: a guard that cannot be read is run rather than skipped.
    pub fn matches(&self, tool: &str) -> bool {
        match self.matcher.as_deref().map(str::trim) {
            None | Some("") | Some("*") => true,
            Some(m) => self
                .compiled
                .0
                .get_or_init(|| regex::Regex::new(&format!("^(?:{m})$")).ok())
                .as_ref()
                .is_none_or(|re| re.is_match(tool)),
        }
    }

    /// ` (tools git__.*)` for a tool event's hook with a matcher; empty otherwise.
    pub fn matcher_note(&self, event: HookEvent) -> String {
        self.matcher
            .as_deref()
            .filter(|m| event.is_tool_event() && !m.trim().is_empty())
            .map(|m| format!(" (tools {m})"))
            .unwrap_or_default()
    }

    /// `, on error: deny` for a guard hook that refuses what it cannot check; empty otherwise
    /// (by default a hook that cannot run lets the call through).
    pub fn on_error_note(&self) -> &'static str {
        if self.fails_closed() {
            ", on error: deny"
        } else {
            ""
        }
    }

    /// The command for people: `guard.sh --strict` (the program's file name, then arguments).
    pub fn label(&self) -> String {
        let mut parts = self.command.iter();
        let program = parts
            .next()
            .map(|p| {
                std::path::Path::new(p)
                    .file_name()
                    .map_or_else(|| p.clone(), |n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        let text = std::iter::once(program)
            .chain(parts.cloned())
            .collect::<Vec<_>>()
            .join(" ");
        crate::text::cap_chars(&text, 80)
    }

    /// A `pre_tool_use` hook with `on_error: deny`: what it cannot check is refused.
    pub fn fails_closed(&self) -> bool {
        self.on_error == Some(OnError::Deny)
    }

    fn validate(&self, key: &str, event: HookEvent) -> Result<(), String> {
        let tool_event = event.is_tool_event();
        match self.command.first() {
            None => {
                return Err(format!(
                    "{key}.command: needs a program, e.g. [\"/path/to/hook.sh\"]"
                ));
            }
            Some(p) if p.trim().is_empty() => {
                return Err(format!("{key}.command: the program (its first element) is empty"));
            }
            Some(_) => {}
        }
        if let Some(m) = self
            .matcher
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty() && *m != "*")
        {
            if !tool_event {
                return Err(format!(
                    "{key}.matcher: only pre_tool_use and post_tool_use hooks match tool names"
                ));
            }
            regex::Regex::new(&format!("^(?:{m})$"))
                .map_err(|e| format!("{key}.matcher: `{m}` is not a regular expression: {e}"))?;
        }
        if self.timeout_secs == Some(0) {
            return Err(format!("{key}.timeout_secs: must be at least 1"));
        }
        if self.on_error.is_some() && event != HookEvent::PreToolUse {
            return Err(format!(
                "{key}.on_error: only a pre_tool_use hook has a call to deny"
            ));
        }
        self.sandbox.validate(&format!("{key}.sandbox"))
    }
}

/// The hooks of one level, by event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Hooks {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pre_tool_use: Vec<Hook>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub post_tool_use: Vec<Hook>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turn_finished: Vec<Hook>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub iteration_finished: Vec<Hook>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub run_finished: Vec<Hook>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub worktree_created: Vec<Hook>,
}

impl Hooks {
    pub fn is_empty(&self) -> bool {
        HookEvent::ALL.iter().all(|e| self.of(*e).is_empty())
    }

    /// The hooks of one event.
    pub fn of(&self, event: HookEvent) -> &[Hook] {
        match event {
            HookEvent::PreToolUse => &self.pre_tool_use,
            HookEvent::PostToolUse => &self.post_tool_use,
            HookEvent::TurnFinished => &self.turn_finished,
            HookEvent::IterationFinished => &self.iteration_finished,
            HookEvent::RunFinished => &self.run_finished,
            HookEvent::WorktreeCreated => &self.worktree_created,
        }
    }

    fn of_mut(&mut self, event: HookEvent) -> &mut Vec<Hook> {
        match event {
            HookEvent::PreToolUse => &mut self.pre_tool_use,
            HookEvent::PostToolUse => &mut self.post_tool_use,
            HookEvent::TurnFinished => &mut self.turn_finished,
            HookEvent::IterationFinished => &mut self.iteration_finished,
            HookEvent::RunFinished => &mut self.run_finished,
            HookEvent::WorktreeCreated => &mut self.worktree_created,
        }
    }

    /// Every level's hooks together (all of them run: a member's hooks add to its team's and
    /// config.yaml's, they do not replace them).
    pub fn combined<'a>(levels: impl IntoIterator<Item = &'a Hooks>) -> Hooks {
        let mut all = Hooks::default();
        for level in levels {
            for event in HookEvent::ALL {
                all.of_mut(event).extend(level.of(event).iter().cloned());
            }
        }
        all
    }

    /// The hooks of `event` that apply to a call of `tool` (every hook of a non-tool event).
    pub fn matching<'a>(&'a self, event: HookEvent, tool: Option<&str>) -> Vec<&'a Hook> {
        self.of(event)
            .iter()
            .filter(|h| !event.is_tool_event() || tool.is_none_or(|t| h.matches(t)))
            .collect()
    }

    /// How many hooks, by event, for people: `pre_tool_use 2, iteration_finished 1`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = HookEvent::ALL
            .iter()
            .filter(|e| !self.of(**e).is_empty())
            .map(|e| format!("{e} {}", self.of(*e).len()))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }

    /// Checks every hook; the message names the key under `key` (`hooks`, `workers[0].hooks`).
    pub fn validate(&self, key: &str) -> Result<(), String> {
        for event in HookEvent::ALL {
            for (i, hook) in self.of(event).iter().enumerate() {
                hook.validate(&format!("{key}.{event}[{i}]"), event)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Hooks {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn hooks_read_like_claude_codes_with_argv_commands() {
        let hooks = parse(
            "pre_tool_use:\n  - matcher: \"git__.*|time__get_current_time\"\n    command: [/bin/guard.sh, --strict]\n    timeout_secs: 5\niteration_finished:\n  - command: [sh, -c, \"cargo test\"]\n",
        );
        hooks.validate("hooks").unwrap();
        let pre = &hooks.pre_tool_use[0];
        assert!(pre.matches("git__git_status") && pre.matches("time__get_current_time"));
        assert!(!pre.matches("time__convert_time") && !pre.matches("xgit__status"));
        assert_eq!(pre.timeout().as_secs(), 5);
        assert_eq!(pre.label(), "guard.sh --strict");
        assert_eq!(
            hooks.iteration_finished[0].timeout().as_secs(),
            DEFAULT_TIMEOUT_SECS
        );
        assert_eq!(hooks.summary(), "pre_tool_use 1, iteration_finished 1");
        assert_eq!(
            hooks
                .matching(HookEvent::PreToolUse, Some("time__convert_time"))
                .len(),
            0
        );
        assert_eq!(hooks.matching(HookEvent::IterationFinished, None).len(), 1);
        let all = Hook {
            matcher: Some("*".into()),
            command: vec!["x".into()],
            ..Hook::default()
        };
        assert!(all.matches("anything"));
    }

    #[test]
    fn problems_name_the_key() {
        let cases = [
            (
                "pre_tool_use: [{ command: [] }]",
                "hooks.pre_tool_use[0].command: needs a program",
            ),
            (
                "post_tool_use: [{ command: [\" \"] }]",
                "hooks.post_tool_use[0].command: the program",
            ),
            (
                "pre_tool_use: [{ command: [x], matcher: \"(\" }]",
                "hooks.pre_tool_use[0].matcher: `(` is not a regular expression",
            ),
            (
                "run_finished: [{ command: [x], matcher: \"git.*\" }]",
                "hooks.run_finished[0].matcher: only pre_tool_use and post_tool_use",
            ),
            (
                "turn_finished: [{ command: [x], timeout_secs: 0 }]",
                "hooks.turn_finished[0].timeout_secs",
            ),
            (
                "worktree_created: [{ command: [x], sandbox: { allow_write: [rel] } }]",
                "hooks.worktree_created[0].sandbox.allow_write",
            ),
            (
                "post_tool_use: [{ command: [x], on_error: deny }]",
                "hooks.post_tool_use[0].on_error: only a pre_tool_use hook",
            ),
        ];
        let guard = parse("pre_tool_use: [{ command: [x], on_error: deny }]");
        assert!(guard.validate("hooks").is_ok() && guard.pre_tool_use[0].fails_closed());
        assert!(serde_yaml::from_str::<Hooks>("pre_tool_use: [{ command: [x], on_error: block }]").is_err());
        for (yaml, expected) in cases {
            let message = parse(yaml).validate("hooks").unwrap_err();
            assert!(message.starts_with(expected), "{yaml}: {message}");
        }
        assert!(serde_yaml::from_str::<Hooks>("stop: [{ command: [x] }]").is_err());
        assert!(serde_yaml::from_str::<Hooks>("pre_tool_use: [{ command: [x], type: command }]").is_err());
    }

    #[test]
    fn levels_add_up() {
        let config = parse("pre_tool_use: [{ command: [a] }]");
        let team = parse("pre_tool_use: [{ command: [b] }]\nrun_finished: [{ command: [c] }]");
        let all = Hooks::combined([&config, &team]);
        assert_eq!(all.pre_tool_use.len(), 2);
        assert_eq!(all.run_finished.len(), 1);
        assert!(Hooks::default().is_empty() && !all.is_empty());
    }
}
