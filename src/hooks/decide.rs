//! What the hooks of one event decided together. For a tool call any deny wins, then ask, then
//! allow (as in Claude Code); hook errors block nothing and are reported.

use super::run::{HookRun, Outcome};

/// The verdict on one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No hook had an opinion: the call goes through the usual approval.
    Continue,
    /// A hook allowed it: no approval is asked.
    Allow,
    /// A hook wants the user asked (the reason is shown with the question).
    Ask { reason: Option<String> },
    /// A hook refused it: the reason goes back to the model as the call's result.
    Deny { reason: String, hook: String },
}

/// What the pre_tool_use hooks said about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreToolUse {
    pub verdict: Verdict,
    /// Arguments a hook asked to call the tool with instead (the last one given wins).
    pub updated_input: Option<serde_json::Value>,
}

/// Combines the runs of a call's pre_tool_use hooks.
pub fn pre_tool_use(runs: &[HookRun]) -> PreToolUse {
    let mut verdict = Verdict::Continue;
    let mut updated_input = None;
    for run in runs {
        let said = match &run.outcome {
            Outcome::Blocked { reason } => Verdict::Deny {
                reason: reason.clone(),
                hook: run.label.clone(),
            },
            Outcome::Ok(Some(out)) => {
                let specific = out.specific.as_ref();
                if let Some(input) = specific.and_then(|s| s.updated_input.clone()) {
                    updated_input = Some(input);
                }
                let reason = specific
                    .and_then(|s| s.permission_decision_reason.clone())
                    .or_else(|| out.reason.clone());
                let word = specific.and_then(|s| s.permission_decision.as_deref()).or(
                    match out.decision.as_deref() {
                        Some("block") => Some("deny"),
                        Some("approve") => Some("allow"),
                        _ => None,
                    },
                );
                match word {
                    Some("deny") => Verdict::Deny {
                        reason: reason.unwrap_or_else(|| "denied by a hook".into()),
                        hook: run.label.clone(),
                    },
                    _ if out.continue_ == Some(false) => Verdict::Deny {
                        reason: out
                            .stop_reason
                            .clone()
                            .or(reason)
                            .unwrap_or_else(|| "stopped by a hook".into()),
                        hook: run.label.clone(),
                    },
                    Some("ask") => Verdict::Ask { reason },
                    Some("allow") => Verdict::Allow,
                    _ => Verdict::Continue,
                }
            }
            Outcome::Ok(None) => Verdict::Continue,
            // Reported by the guard (hook_failed); it blocks nothing, unless the hook says
            // what it cannot check is refused (`on_error: deny`).
            Outcome::Failed { .. } | Outcome::TimedOut { .. } if run.fails_closed => Verdict::Deny {
                reason: crate::describe::safety::guard_could_not_run(&run.error().unwrap_or_default()),
                hook: run.label.clone(),
            },
            Outcome::Failed { .. } | Outcome::TimedOut { .. } => Verdict::Continue,
        };
        if rank(&said) > rank(&verdict) {
            verdict = said;
        }
    }
    PreToolUse {
        verdict,
        updated_input,
    }
}

fn rank(v: &Verdict) -> u8 {
    match v {
        Verdict::Continue => 0,
        Verdict::Allow => 1,
        Verdict::Ask { .. } => 2,
        Verdict::Deny { .. } => 3,
    }
}

/// What the hooks of an event after the fact (post_tool_use, turn_finished, run_finished,
/// worktree_created) said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Feedback {
    /// Objections: an exit 2's stderr or a `decision: block`'s reason, each with its hook.
    /// After a tool call they go to the model with the result.
    pub objections: Vec<(String, String)>,
    /// `additionalContext` the hooks gave (after a tool call: for the model).
    pub context: Vec<String>,
}

/// Combines the runs of an after-the-fact event.
pub fn feedback(runs: &[HookRun]) -> Feedback {
    let mut out = Feedback::default();
    for run in runs {
        match &run.outcome {
            Outcome::Blocked { reason } => out.objections.push((run.label.clone(), reason.clone())),
            Outcome::Ok(Some(o)) => {
                if o.decision.as_deref() == Some("block") || o.continue_ == Some(false) {
                    let reason = o
                        .reason
                        .clone()
                        .or_else(|| o.stop_reason.clone())
                        .unwrap_or_else(|| "blocked by a hook".into());
                    out.objections.push((run.label.clone(), reason));
                }
                if let Some(c) = o.specific.as_ref().and_then(|s| s.additional_context.clone()) {
                    out.context.push(c);
                }
            }
            // A failure is reported by the guard (hook_failed); it objects to nothing.
            Outcome::Ok(None) | Outcome::Failed { .. } | Outcome::TimedOut { .. } => {}
        }
    }
    out
}

/// What iteration_finished hooks give the evaluator: each hook's output (stdout; with stderr
/// and the exit status when it did not exit 0, since a failing test run is the news), or its
/// `additionalContext` when it printed JSON. Empty when there is nothing to say.
pub fn evaluator_notes(runs: &[HookRun], max_chars: usize) -> String {
    let mut notes = Vec::new();
    for run in runs {
        let body = match &run.outcome {
            Outcome::Ok(Some(o)) => o
                .specific
                .as_ref()
                .and_then(|s| s.additional_context.clone())
                .or_else(|| o.reason.clone())
                .unwrap_or_default(),
            Outcome::Ok(None) => run.stdout.trim().to_string(),
            Outcome::Blocked { .. } | Outcome::Failed { .. } => {
                let mut text = run.stdout.trim().to_string();
                if !run.stderr.trim().is_empty() {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(run.stderr.trim());
                }
                text
            }
            Outcome::TimedOut { after } => format!("(timed out after {}s)", after.as_secs()),
        };
        let status = match &run.outcome {
            Outcome::Ok(_) => String::new(),
            Outcome::Blocked { .. } => " (exit 2)".into(),
            Outcome::Failed { message } => format!(" ({})", message.lines().next().unwrap_or("failed")),
            Outcome::TimedOut { .. } => " (timed out)".into(),
        };
        if body.is_empty() && status.is_empty() {
            continue;
        }
        let mut body = body;
        crate::text::keep_last_chars(&mut body, max_chars);
        notes.push(format!("`{}`{status}:\n{body}", run.label));
    }
    notes.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::run::{HookOutput, SpecificOutput};
    use std::time::Duration;

    fn run(label: &str, outcome: Outcome) -> HookRun {
        HookRun {
            label: label.into(),
            outcome,
            stdout: String::new(),
            stderr: String::new(),
            fails_closed: false,
        }
    }

    fn said(decision: &str) -> Outcome {
        Outcome::Ok(Some(HookOutput {
            specific: Some(SpecificOutput {
                permission_decision: Some(decision.into()),
                permission_decision_reason: Some(format!("because {decision}")),
                ..SpecificOutput::default()
            }),
            ..HookOutput::default()
        }))
    }

    #[test]
    fn deny_wins_over_ask_over_allow_and_errors_block_nothing() {
        let failed = run(
            "broken",
            Outcome::Failed {
                message: "it exited with status 1".into(),
            },
        );
        let d = pre_tool_use(&[run("a", said("allow")), failed.clone()]);
        assert_eq!(d.verdict, Verdict::Allow);
        assert_eq!(
            failed.error().as_deref(),
            Some("hook `broken` failed: it exited with status 1")
        );
        let d = pre_tool_use(&[run("a", said("allow")), run("q", said("ask"))]);
        assert_eq!(
            d.verdict,
            Verdict::Ask {
                reason: Some("because ask".into())
            }
        );
        let d = pre_tool_use(&[
            run("q", said("ask")),
            run("g", Outcome::Blocked { reason: "no".into() }),
            run("a", said("allow")),
        ]);
        assert_eq!(
            d.verdict,
            Verdict::Deny {
                reason: "no".into(),
                hook: "g".into()
            }
        );
        assert_eq!(
            pre_tool_use(std::slice::from_ref(&failed)).verdict,
            Verdict::Continue
        );
        assert_eq!(pre_tool_use(&[]).verdict, Verdict::Continue);
        // Review 26-2, finding 16: `on_error: deny` refuses what the hook could not check.
        let closed = HookRun {
            fails_closed: true,
            ..failed
        };
        assert_eq!(
            pre_tool_use(&[run("a", said("allow")), closed]).verdict,
            Verdict::Deny {
                reason: "the guard hook could not run, and it denies what it cannot check (on_error: deny): hook `broken` failed: it exited with status 1".into(),
                hook: "broken".into()
            }
        );
        let mut timed_out = run(
            "slow",
            Outcome::TimedOut {
                after: Duration::from_secs(3),
            },
        );
        timed_out.fails_closed = true;
        assert!(matches!(pre_tool_use(&[timed_out]).verdict, Verdict::Deny { .. }));
    }

    #[test]
    fn the_older_decision_words_and_continue_false_are_read() {
        let legacy = Outcome::Ok(Some(HookOutput {
            decision: Some("block".into()),
            reason: Some("legacy".into()),
            ..HookOutput::default()
        }));
        assert_eq!(
            pre_tool_use(&[run("l", legacy.clone())]).verdict,
            Verdict::Deny {
                reason: "legacy".into(),
                hook: "l".into()
            }
        );
        let stop = Outcome::Ok(Some(HookOutput {
            continue_: Some(false),
            stop_reason: Some("enough".into()),
            ..HookOutput::default()
        }));
        assert!(
            matches!(pre_tool_use(&[run("s", stop)]).verdict, Verdict::Deny { reason, .. } if reason == "enough")
        );
        let timed_out = run(
            "t",
            Outcome::TimedOut {
                after: Duration::from_secs(3),
            },
        );
        let f = feedback(&[run("l", legacy), timed_out.clone()]);
        assert_eq!(f.objections, [("l".to_string(), "legacy".to_string())]);
        assert_eq!(
            timed_out.error().as_deref(),
            Some("hook `t` timed out after 3s and was stopped")
        );
    }

    #[test]
    fn evaluator_notes_carry_output_and_a_failing_status() {
        let mut ok = run("tests", Outcome::Ok(None));
        ok.stdout = "12 passed\n".into();
        let mut failing = run(
            "cargo test",
            Outcome::Failed {
                message: "it exited with status 101".into(),
            },
        );
        failing.stdout = "1 failed".into();
        failing.stderr = "error: test failed".into();
        let notes = evaluator_notes(&[ok, failing, run("quiet", Outcome::Ok(None))], 1000);
        assert_eq!(
            notes,
            "`tests`:\n12 passed\n\n`cargo test` (it exited with status 101):\n1 failed\nerror: test failed"
        );
    }
}
