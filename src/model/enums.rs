//! String enums shared by JSON, YAML, the CLI and events.
//!
//! Written in snake_case; read ignoring case (and treating `-` like `_`), so hand-edited files
//! and CLI flags are forgiving. An unknown value is an error listing what is accepted, never a
//! silent default.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Error for a string that names no variant of a string enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{value}` (expected one of: {expected})")]
pub struct UnknownVariant {
    pub kind: &'static str,
    pub value: String,
    pub expected: String,
}

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident, $kind:literal { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The canonical snake_case spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownVariant;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
                $(if wanted == $text {
                    return Ok($name::$variant);
                })+
                Err(UnknownVariant {
                    kind: $kind,
                    value: s.to_string(),
                    expected: [$($text),+].join(", "),
                })
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a {} name", $kind)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        v.parse().map_err(|e: UnknownVariant| E::custom(e))
                    }
                }
                deserializer.deserialize_str(V)
            }
        }
    };
}

/// For enums declared beside what they are about (`Mode`, in the mode table).
pub(super) use string_enum;

string_enum!(
    /// A session's part in its team.
    #[derive(Default)]
    Role, "role" {
        #[default]
        Worker => "worker",
        Orchestrator => "orchestrator",
        Evaluator => "evaluator",
    }
);

string_enum!(
    /// What a group is for.
    #[derive(Default)]
    GroupKind, "group kind" {
        #[default]
        Default => "default",
        Repo => "repo",
        Team => "team",
    }
);

string_enum!(
    /// Who wrote a transcript message.
    MessageRole, "message role" {
        User => "user",
        Assistant => "assistant",
        System => "system",
        /// A tool's result, sent back to the model (`tool_result` says which call).
        Tool => "tool",
        /// Something huddle itself recorded (a cycle summary, an error, a warning).
        Notice => "notice",
    }
);

string_enum!(
    /// Where a preset comes from; a higher tier shadows a lower one of the same name.
    Tier, "preset tier" {
        Builtin => "builtin",
        User => "user",
        Repo => "repo",
    }
);

string_enum!(
    /// How huddle talks to a provider (config.yaml `kind:`).
    ProviderKind, "provider kind" {
        /// Any OpenAI-compatible Chat Completions endpoint.
        Openai => "openai",
        /// The Anthropic Messages API.
        Anthropic => "anthropic",
        /// A local program run once per turn.
        Command => "command",
        /// A local agent speaking the Agent Client Protocol (JSON-RPC on stdio).
        Acp => "acp",
        /// The built-in offline simulator.
        Sim => "sim",
    }
);

impl ProviderKind {
    /// It runs a program on this machine (a CLI or ACP agent), not a model API.
    pub fn runs_local_program(self) -> bool {
        matches!(self, ProviderKind::Command | ProviderKind::Acp)
    }
}

string_enum!(
    /// How a team's members share git worktrees (preset `worktrees:`, stored on the group).
    #[derive(Default)]
    WorktreeStrategy, "worktree strategy" {
        /// Everyone works in the repository itself.
        #[default]
        Shared => "shared",
        /// One worktree for the whole team.
        GroupShared => "group_shared",
        /// One worktree for the orchestrator (and evaluator), one shared by the workers.
        OrchestratorIsolated => "orchestrator_isolated",
        /// One worktree for the orchestrator (and evaluator) and one per worker.
        FullyIsolated => "fully_isolated",
    }
);

string_enum!(
    /// What a team's members remember between runs (preset `memory:`, stored on the group).
    #[derive(Default)]
    Memory, "memory" {
        /// Each run starts from the system prompt and the group's shared context.
        #[default]
        Run => "run",
        /// Members keep their conversation from run to run.
        Conversation => "conversation",
    }
);

impl Memory {
    /// True for `run` (the default): lets serde leave it out of files.
    pub fn is_run(&self) -> bool {
        *self == Memory::Run
    }
}

impl WorktreeStrategy {
    /// True for `shared` (no worktree is made): lets serde leave the default out of files.
    pub fn is_shared(&self) -> bool {
        *self == WorktreeStrategy::Shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    #[test]
    fn parses_ignoring_case_and_dashes() {
        assert_eq!(
            "Orchestrator-Reflect".parse::<Mode>(),
            Ok(Mode::OrchestratorReflect)
        );
        assert_eq!(" BROADCAST ".parse::<Mode>(), Ok(Mode::Broadcast));
        assert_eq!("Evaluator".parse::<Role>(), Ok(Role::Evaluator));
    }

    #[test]
    fn unknown_value_lists_the_accepted_ones() {
        let err = "round_robin".parse::<Mode>().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("unknown mode `round_robin`"), "{text}");
        assert!(text.contains("orchestrator_reflect"), "{text}");
    }

    #[test]
    fn serde_round_trip_uses_snake_case() {
        let json = serde_json::to_string(&Mode::OrchestratorReflect).unwrap();
        assert_eq!(json, "\"orchestrator_reflect\"");
        let back: Mode = serde_json::from_str("\"ORCHESTRATOR_REFLECT\"").unwrap();
        assert_eq!(back, Mode::OrchestratorReflect);
        assert!(serde_json::from_str::<Mode>("\"nope\"").is_err());
        for mode in Mode::ALL {
            assert_eq!(mode.as_str().parse::<Mode>(), Ok(*mode));
        }
    }
}
