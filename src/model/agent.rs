//! CLI coding agents as providers: how a `command` provider's stdout is read (`format:`), the
//! ready-made agents (`agent:`), and the agent's own session a huddle session continues.

use serde::{Deserialize, Serialize};

/// How a `command` provider's stdout is read (config.yaml `format:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentFormat {
    /// Plain text, streamed as the answer.
    #[default]
    Text,
    /// Claude Code's `--output-format stream-json` NDJSON.
    ClaudeStreamJson,
    /// Codex's `codex exec --json` JSONL events.
    CodexJson,
    /// Gemini CLI's `--output-format stream-json` JSONL events.
    GeminiStreamJson,
}

impl AgentFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentFormat::Text => "text",
            AgentFormat::ClaudeStreamJson => "claude-stream-json",
            AgentFormat::CodexJson => "codex-json",
            AgentFormat::GeminiStreamJson => "gemini-stream-json",
        }
    }

    /// A structured format: parsed into text, tool steps, usage and a session id.
    pub fn is_structured(self) -> bool {
        self != AgentFormat::Text
    }
}

/// A ready-made CLI agent (config.yaml `agent:`): fills in `command` and `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Claude Code (`claude`).
    Claude,
    /// OpenAI Codex CLI (`codex`).
    Codex,
    /// Gemini CLI (`gemini`).
    Gemini,
}

impl AgentKind {
    pub const ALL: &'static [AgentKind] = &[AgentKind::Claude, AgentKind::Codex, AgentKind::Gemini];

    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
        }
    }

    /// The program the preset runs.
    pub fn program(self) -> &'static str {
        self.as_str()
    }

    pub fn format(self) -> AgentFormat {
        match self {
            AgentKind::Claude => AgentFormat::ClaudeStreamJson,
            AgentKind::Codex => AgentFormat::CodexJson,
            AgentKind::Gemini => AgentFormat::GeminiStreamJson,
        }
    }

    /// The preset's program and arguments; the prompt goes to stdin. The resume flag is added
    /// per turn (see `providers::agent::resume_args`).
    pub fn command(self) -> Vec<String> {
        let args: &[&str] = match self {
            AgentKind::Claude => &[
                "claude",
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--model",
                "{model}",
            ],
            AgentKind::Codex => &[
                "codex",
                "exec",
                "--json",
                "--skip-git-repo-check",
                "-m",
                "{model}",
                "-",
            ],
            AgentKind::Gemini => &["gemini", "--output-format", "stream-json", "-m", "{model}"],
        };
        args.iter().map(|a| a.to_string()).collect()
    }

    /// Where the agent keeps its own state (sessions, settings, credentials) under the home
    /// directory: writable in its sandbox, or it could not resume a conversation or log in.
    pub fn state_paths(self) -> &'static [&'static str] {
        match self {
            AgentKind::Claude => &["~/.claude", "~/.claude.json"],
            AgentKind::Codex => &["~/.codex"],
            AgentKind::Gemini => &["~/.gemini"],
        }
    }

    /// What stays read-only inside [`AgentKind::state_paths`]: the agent's own settings,
    /// hooks, instructions, commands and extensions. A sandboxed agent that could write them
    /// would run its own programs in the user's next plain (unconfined) session. A path
    /// ending in `/` is a directory.
    pub fn protected_state(self) -> &'static [&'static str] {
        match self {
            AgentKind::Claude => &[
                "~/.claude/settings.json",
                "~/.claude/settings.local.json",
                "~/.claude/CLAUDE.md",
                "~/.claude/hooks/",
                "~/.claude/agents/",
                "~/.claude/commands/",
                "~/.claude/plugins/",
                "~/.claude/skills/",
                "~/.claude/output-styles/",
            ],
            AgentKind::Codex => &[
                "~/.codex/config.toml",
                "~/.codex/hooks.json",
                "~/.codex/AGENTS.md",
                "~/.codex/prompts/",
                "~/.codex/rules/",
            ],
            AgentKind::Gemini => &[
                "~/.gemini/settings.json",
                "~/.gemini/GEMINI.md",
                "~/.gemini/commands/",
                "~/.gemini/extensions/",
            ],
        }
    }

    /// The environment variables the agent reads its key, endpoint and options from: passed
    /// into its sandbox (prefixes ending in `*`); no other agent's keys are.
    pub fn env_vars(self) -> &'static [&'static str] {
        match self {
            AgentKind::Claude => &["ANTHROPIC_*", "CLAUDE_*", "DISABLE_*", "MCP_*"],
            AgentKind::Codex => &["OPENAI_*", "CODEX_*"],
            AgentKind::Gemini => &["GEMINI_*", "GOOGLE_*"],
        }
    }

    /// Model names offered in pickers when the provider lists none (the agents' own aliases).
    pub fn model_aliases(self) -> &'static [&'static str] {
        match self {
            AgentKind::Claude => &["sonnet", "opus", "haiku"],
            AgentKind::Codex => &[],
            AgentKind::Gemini => &["auto", "pro", "flash"],
        }
    }
}

/// The conversation a CLI agent keeps itself, continued by the next turn instead of re-sending
/// the transcript. Only valid with the provider that started it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSession {
    /// The configured provider name (`claude`, ...).
    pub provider: String,
    /// The agent's session or thread id.
    pub id: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_read_and_write_kebab_case() {
        let f: AgentFormat = serde_json::from_str("\"claude-stream-json\"").unwrap();
        assert_eq!(f, AgentFormat::ClaudeStreamJson);
        for f in [
            AgentFormat::Text,
            AgentFormat::ClaudeStreamJson,
            AgentFormat::CodexJson,
            AgentFormat::GeminiStreamJson,
        ] {
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{}\"", f.as_str()));
        }
        assert!(serde_json::from_str::<AgentFormat>("\"json\"").is_err());
    }

    #[test]
    fn presets_pair_a_program_with_its_format() {
        for kind in AgentKind::ALL {
            let command = kind.command();
            assert_eq!(command[0], kind.program());
            assert!(command.iter().any(|a| a == "{model}"), "{command:?}");
            assert!(kind.format().is_structured());
        }
    }
}
