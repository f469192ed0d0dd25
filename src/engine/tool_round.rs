//! One round of a turn's tool loop: the calls a model asked for, run in parallel. Each call is
//! checked (known tool, valid arguments), approved (per the server's rule and the front end's
//! policy), run under the turn's cancellation, capped and turned into the text the model gets
//! back. Nothing a model or tool sends can fail the turn: every problem becomes a tool error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::model::ToolCall;
use crate::providers::PermissionRequest;
use crate::tools::approval::{DENIED_BY_USER, DENIED_HEADLESS, DENIED_OVER_MCP};
use crate::tools::limits::cap_result;
use crate::tools::{AgentOption, Approval, ApprovalPolicy, Decision, Offer, ToolError, schema, split_name};

use super::EngineShared;
use super::events::{EngineEvent, EventKind, ExecutionTag, SharedStr};
use super::guard::Guard;
use super::lent_tools::TurnTools;
use crate::hooks::{HookEvent, Verdict};

/// What one call came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    pub call: ToolCall,
    /// The text sent back to the model (capped).
    pub text: String,
    pub is_error: bool,
    pub duration: Duration,
    /// Bytes the tool returned before the cap.
    pub size: u64,
}

/// The tools a mode lent the turn, with their names (read once per turn, not per round).
pub(crate) struct Lent<'a> {
    pub tools: &'a dyn TurnTools,
    pub names: Vec<String>,
}

/// What one round came to.
pub(crate) struct Round {
    /// One result per call, in the calls' order.
    pub results: Vec<CallResult>,
    /// A lent tool's answer ends the turn after this round.
    pub ends_turn: bool,
    /// The turn's answer a lent tool gave, in place of the model's words so far.
    pub answer: Option<String>,
}

/// Why a call has no result: huddle's own words (a hook or the user said no, bad arguments,
/// cancelled), or the server's error (`from_server`).
struct NoResult {
    text: String,
    from_server: bool,
}

impl From<String> for NoResult {
    fn from(text: String) -> NoResult {
        NoResult {
            text,
            from_server: false,
        }
    }
}

/// Who is calling: enough to emit the round's events and find its run.
pub(crate) struct CallContext<'a> {
    pub shared: &'a Arc<EngineShared>,
    pub session_id: &'a str,
    pub session: &'a str,
    pub group_id: &'a str,
    pub group: &'a str,
    pub run_id: &'a Option<SharedStr>,
    pub cancel: &'a CancellationToken,
    /// The session's working directory (its worktree, if any): `cwd: session` servers run there.
    pub workdir: Option<&'a std::path::Path>,
    /// The execution the turn is part of.
    pub execution: Option<&'a ExecutionTag>,
    /// The session's hooks (and the sandbox they run in).
    pub guard: &'a Guard,
    pub iteration: Option<u32>,
}

impl CallContext<'_> {
    pub fn emit(&self, kind: EventKind) {
        self.shared.events.emit(EngineEvent {
            group_id: self.group_id.into(),
            group: self.group.into(),
            run_id: self.run_id.clone(),
            execution: self.execution.cloned(),
            kind,
        });
    }

    /// A notice written into the session's transcript during the turn, and its event.
    fn notice(&self, text: String) {
        let mut notice = crate::model::Message::notice(text.clone());
        notice.iteration = self.iteration;
        notice.execution_id = self.execution.map(|e| e.execution_id.clone());
        self.shared.writer.append(self.session_id, &notice);
        self.emit(EventKind::Notice {
            session_id: self.session_id.to_string(),
            session: self.session.to_string(),
            text,
            message: Some(Arc::new(notice)),
        });
    }

    /// Runs one round: the calls of tools a mode lent the turn are answered by the mode, one
    /// after the other in the model's order (a dispatch's ids follow it), while the others run
    /// at once. Results come back in the calls' order.
    pub async fn run_round(&self, offer: &Offer, calls: &[ToolCall], lent: Option<&Lent<'_>>) -> Round {
        let is_lent = |c: &ToolCall| lent.is_some_and(|l| l.names.contains(&c.name));
        let others = calls
            .iter()
            .filter(|c| !is_lent(c))
            .map(|call| self.run_call(offer, call, lent));
        let answer_lent = async {
            let mut answers = Vec::new();
            let Some(lent) = lent else {
                return answers;
            };
            for call in calls.iter().filter(|c| is_lent(c)) {
                let started = Instant::now();
                let answer = lent.tools.call(call).await;
                answers.push((answer, started.elapsed()));
            }
            answers
        };
        let (ran, answers) = futures::join!(futures::future::join_all(others), answer_lent);
        let mut ran = ran.into_iter();
        let mut answers = answers.into_iter();
        let mut round = Round {
            results: Vec::with_capacity(calls.len()),
            ends_turn: false,
            answer: None,
        };
        for call in calls {
            if !is_lent(call) {
                round.results.extend(ran.next());
                continue;
            }
            let Some((answer, duration)) = answers.next() else {
                continue;
            };
            round.ends_turn |= answer.ends_turn;
            if answer.ends_turn && round.answer.is_none() {
                round.answer = answer.answer;
            }
            round.results.push(CallResult {
                call: call.clone(),
                size: answer.text.len() as u64,
                text: answer.text,
                is_error: answer.is_error,
                duration,
            });
        }
        round
    }

    async fn run_call(&self, offer: &Offer, call: &ToolCall, lent: Option<&Lent<'_>>) -> CallResult {
        let started = Instant::now();
        let (mut text, is_error, size) = match self.attempt(offer, call, lent).await {
            Ok((text, is_error)) => {
                self.report_denials(call, &text);
                let size = text.len() as u64;
                let max = self
                    .shared
                    .profile(self.group_id, Some(self.session_id))
                    .options
                    .tool_result_max_bytes;
                let mut text = cap_result(&text, max);
                self.after_call(call, &mut text, is_error).await;
                (text, is_error, size)
            }
            Err(NoResult { text, from_server }) => {
                // Only what the server said can be its sandbox's (not a hook's or the user's
                // refusal, which may quote anything).
                if from_server {
                    self.report_denials(call, &text);
                }
                let size = text.len() as u64;
                (text, true, size)
            }
        };
        if text.is_empty() && is_error {
            text = "the tool failed without saying why".into();
        }
        CallResult {
            call: call.clone(),
            text,
            is_error,
            duration: started.elapsed(),
            size,
        }
    }

    /// A `sandbox_denied` event for each thing the sandbox of the call's server stopped: what
    /// its result says (a read-only file system, no network) and what its stderr said since
    /// the last call.
    fn report_denials(&self, call: &ToolCall, text: &str) {
        let profile = self.shared.profile(self.group_id, Some(self.session_id));
        let Some(source) = split_name(&call.name).and_then(|(server, _)| profile.options.tools.get(server))
        else {
            return;
        };
        if !source.confined() {
            return;
        }
        let mut found: Vec<String> = crate::sandbox::denial_in(text).into_iter().collect();
        for line in source.take_denials() {
            if !found.contains(&line) {
                found.push(line);
            }
        }
        for detail in found {
            self.emit(EventKind::sandbox_denied(
                self.session_id,
                self.session,
                format!("tool {}", call.name),
                detail,
            ));
        }
    }

    /// The post_tool_use hooks of a call that ran: they see the call and its result; what they
    /// object or add goes to the model after the result.
    async fn after_call(&self, call: &ToolCall, text: &mut String, is_error: bool) {
        let Some(mut input) = self.guard.call_input(
            HookEvent::PostToolUse,
            call,
            self.run_id.as_deref(),
            self.iteration,
        ) else {
            return;
        };
        input.tool_response = Some(serde_json::json!({ "text": text.as_str(), "is_error": is_error }));
        let feedback = self
            .guard
            .after(HookEvent::PostToolUse, &input, &|kind| self.emit(kind))
            .await;
        for (hook, reason) in feedback.objections {
            text.push_str(&format!("\n\n[hook `{hook}`] {reason}"));
        }
        for context in feedback.context {
            text.push_str(&format!("\n\n[hook] {context}"));
        }
    }

    /// The pre_tool_use hooks' verdict on a call, with the arguments to call it with (a hook
    /// may give others, checked against the schema again). `Err`: refused, the reason for the
    /// model.
    async fn before_call(
        &self,
        call: &ToolCall,
        arguments: serde_json::Map<String, serde_json::Value>,
        schema_of: &serde_json::Value,
    ) -> Result<(Verdict, serde_json::Map<String, serde_json::Value>), String> {
        let Some(input) = self.guard.call_input(
            HookEvent::PreToolUse,
            call,
            self.run_id.as_deref(),
            self.iteration,
        ) else {
            return Ok((Verdict::Continue, arguments));
        };
        let decided = self.guard.before_call(&input, &|kind| self.emit(kind)).await;
        if let Verdict::Deny { reason, hook } = &decided.verdict {
            return Err(blocked_by_hook(hook, reason));
        }
        let arguments = match decided.updated_input {
            Some(updated) => schema::parse_arguments(&updated.to_string(), schema_of).map_err(|problem| {
                format!(
                    "a hook changed the arguments of `{}` into invalid ones: {problem}",
                    call.name
                )
            })?,
            None => arguments,
        };
        Ok((decided.verdict, arguments))
    }

    /// The tool's text and whether it is an error; `Err` for a call that never reached the
    /// tool (the message says why, for the model).
    async fn attempt(
        &self,
        offer: &Offer,
        call: &ToolCall,
        lent: Option<&Lent<'_>>,
    ) -> Result<(String, bool), NoResult> {
        let Some(spec) = offer.spec(&call.name) else {
            if let Some(refusal) = lent.and_then(|l| l.tools.refusal(&call.name)) {
                return Err(refusal.into());
            }
            let known: Vec<&str> = offer.specs.iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "unknown tool `{}`; the tools you can call are: {}",
                call.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
            .into());
        };
        let arguments = schema::parse_arguments(&call.arguments, &spec.input_schema)
            .map_err(|problem| format!("invalid arguments for `{}`: {problem}", call.name))?;
        let (server, tool) = split_name(&call.name).ok_or_else(|| format!("unknown tool `{}`", call.name))?;
        let profile = self.shared.profile(self.group_id, Some(self.session_id));
        let source = profile
            .options
            .tools
            .get(server)
            .ok_or_else(|| format!("tool server `{server}` is not configured"))?;
        if self.cancel.is_cancelled() {
            return Err(cancelled_note().into());
        }
        let (verdict, arguments) = self.before_call(call, arguments, &spec.input_schema).await?;
        match verdict {
            // A hook's ask is put to the user whatever the server's rule and earlier grants.
            Verdict::Ask { reason } => {
                self.approve(
                    server,
                    tool,
                    call,
                    Some(reason.unwrap_or_else(|| "a hook asks".into())),
                )
                .await?
            }
            Verdict::Allow => {}
            Verdict::Continue | Verdict::Deny { .. } => {
                if source.approval() == Approval::Ask {
                    self.approve(server, tool, call, None).await?;
                }
            }
        }
        if self.cancel.is_cancelled() {
            return Err(cancelled_note().into());
        }
        match source
            .call(tool, arguments, self.workdir, self.cancel.clone())
            .await
        {
            Ok(output) => Ok((output.text, output.is_error)),
            Err(ToolError::Cancelled) => Err(cancelled_note().into()),
            Err(e) => Err(NoResult {
                text: e.to_string(),
                from_server: true,
            }),
        }
    }

    /// Waits for the user's (or the front end's) approval of `call`. `hook_reason`: a hook
    /// asked (the user is asked even if they approved the tool for the session).
    async fn approve(
        &self,
        server: &str,
        tool: &str,
        call: &ToolCall,
        hook_reason: Option<String>,
    ) -> Result<(), String> {
        match self
            .decide(server, tool, call, &call.name, hook_reason, &[])
            .await?
        {
            Decision::ApproveOnce | Decision::ApproveForSession => Ok(()),
            Decision::Deny | Decision::DenyAndStop => Err(DENIED_BY_USER.to_string()),
        }
    }

    /// The decision on `call`, with its events, a grant for the session and a stop of the run
    /// applied. `Err`: refused without asking the user (`huddle run` without
    /// `--approve-tools`) or the run stopped while waiting; the text is for the model.
    /// `options`: the answers an agent that asks offers (shown in the popup). `grant`: what an
    /// approval for the session is kept under (and looked up by): a tool's name, or for an
    /// agent's own call [`agent_grant`].
    async fn decide(
        &self,
        server: &str,
        tool: &str,
        call: &ToolCall,
        grant: &str,
        hook_reason: Option<String>,
        options: &[AgentOption],
    ) -> Result<Decision, String> {
        let approvals = &self.shared.approvals;
        if hook_reason.is_none() && approvals.granted(self.session_id, grant) {
            return Ok(Decision::ApproveOnce);
        }
        let settle = |approval_id: u64, decision: Decision, reason: Option<&str>| {
            self.emit(EventKind::ToolApprovalDecided {
                session_id: self.session_id.to_string(),
                session: self.session.to_string(),
                approval_id,
                call_id: call.id.clone(),
                decision,
                reason: reason.map(str::to_string),
            });
        };
        let fallback = self
            .shared
            .profile(self.group_id, Some(self.session_id))
            .options
            .approval;
        let policy = approvals.policy_for(self.group_id, self.session_id, fallback);
        let decision = match policy {
            ApprovalPolicy::ApproveAll => {
                settle(0, Decision::ApproveOnce, Some("--approve-tools"));
                return Ok(Decision::ApproveOnce);
            }
            ApprovalPolicy::DenyAll | ApprovalPolicy::DenyOverMcp => {
                let reason = if policy == ApprovalPolicy::DenyOverMcp {
                    DENIED_OVER_MCP
                } else {
                    DENIED_HEADLESS
                };
                settle(0, Decision::Deny, Some(reason));
                return Err(reason.to_string());
            }
            ApprovalPolicy::Ask => {
                let (approval_id, answer) = approvals.request();
                self.emit(EventKind::ToolApprovalRequested {
                    session_id: self.session_id.to_string(),
                    session: self.session.to_string(),
                    approval_id,
                    call_id: call.id.clone(),
                    server: server.to_string(),
                    tool: tool.to_string(),
                    arguments: call.arguments.clone(),
                    reason: hook_reason.clone(),
                    options: options.to_vec(),
                });
                let decision = tokio::select! {
                    _ = self.cancel.cancelled() => None,
                    answer = answer => answer.ok(),
                };
                let Some(decision) = decision else {
                    approvals.withdraw(approval_id);
                    settle(approval_id, Decision::Deny, Some("the run was stopped"));
                    return Err(cancelled_note());
                };
                settle(approval_id, decision, None);
                decision
            }
        };
        match decision {
            Decision::ApproveForSession => approvals.grant(self.session_id, grant),
            Decision::DenyAndStop => {
                if let Some(run_id) = self.run_id {
                    self.shared.stop_run(run_id);
                }
            }
            Decision::ApproveOnce | Decision::Deny => {}
        }
        Ok(decision)
    }

    /// An agent that runs its own tools asks before one of them (an ACP agent's permission
    /// request): the session's `pre_tool_use` hooks see it first (a denial refuses, an allow
    /// skips the user), then the same approval as huddle's own tools (the popup, `--approve-tools`
    /// or `huddle run`'s refusal). Anything but an approval refuses.
    pub async fn agent_permission(
        &self,
        agent: &str,
        request: &PermissionRequest,
    ) -> crate::providers::PermissionAnswer {
        let call = &request.call;
        let mut hook_reason = None;
        if let Some(input) = self.guard.call_input(
            HookEvent::PreToolUse,
            call,
            self.run_id.as_deref(),
            self.iteration,
        ) {
            match self
                .guard
                .before_call(&input, &|kind| self.emit(kind))
                .await
                .verdict
            {
                // The hook's reason is the call's result (and what Claude Code's model reads);
                // an ACP agent only hears no, so the transcript says why in a notice too.
                Verdict::Deny { reason, hook } => {
                    self.notice(format!(
                        "pre_tool_use hook `{hook}` denied the agent's `{}`: {reason}",
                        call.name
                    ));
                    return crate::providers::PermissionAnswer {
                        decision: Decision::Deny,
                        refused: Some(reason),
                    };
                }
                Verdict::Allow => return Decision::ApproveOnce.into(),
                Verdict::Ask { reason } => hook_reason = Some(reason.unwrap_or_else(|| "a hook asks".into())),
                Verdict::Continue => {}
            }
        }
        let grant = agent_grant(agent, call);
        match self
            .decide(agent, &call.name, call, &grant, hook_reason, &request.options)
            .await
        {
            Ok(decision) => decision.into(),
            // Refused without asking anyone: huddle's reason is the call's result.
            Err(reason) => crate::providers::PermissionAnswer {
                decision: Decision::Deny,
                refused: Some(reason),
            },
        }
    }
}

/// What an approval for the session of an agent's own call is kept under: the agent, and the
/// call as the popup showed it (its kind, title and input), so that only the same call again is
/// answered without asking. Not the kind alone: the agent names it itself (ACP's `kind` only
/// picks an icon), and a grant on `read` would let it label any command a read (review 27-B).
fn agent_grant(agent: &str, call: &ToolCall) -> String {
    format!("agent\u{0}{agent}\u{0}{}\u{0}{}", call.name, call.arguments)
}

/// Who an agent's permission requests are asked for: a turn's [`CallContext`], owned (the
/// provider holds the asker for the whole turn, beyond the tool loop's borrows). Made only by
/// [`CallContext::agent_asker`], read back only as a `CallContext`.
struct AgentAsk {
    shared: Arc<EngineShared>,
    session_id: String,
    session: String,
    group_id: String,
    group: String,
    run_id: Option<SharedStr>,
    cancel: CancellationToken,
    workdir: Option<std::path::PathBuf>,
    execution: Option<ExecutionTag>,
    guard: Guard,
    iteration: Option<u32>,
    /// The agent's provider name: the "server" the popup names.
    agent: String,
}

impl AgentAsk {
    fn context(&self) -> CallContext<'_> {
        CallContext {
            shared: &self.shared,
            session_id: &self.session_id,
            session: &self.session,
            group_id: &self.group_id,
            group: &self.group,
            run_id: &self.run_id,
            cancel: &self.cancel,
            workdir: self.workdir.as_deref(),
            execution: self.execution.as_ref(),
            guard: &self.guard,
            iteration: self.iteration,
        }
    }
}

impl CallContext<'_> {
    /// What an agent that runs its own tools (`agent`: its provider's name) asks before one of
    /// them goes through: [`CallContext::agent_permission`] of this turn.
    pub fn agent_asker(&self, agent: &str) -> crate::providers::PermissionAsker {
        let me = Arc::new(AgentAsk {
            shared: Arc::clone(self.shared),
            session_id: self.session_id.to_string(),
            session: self.session.to_string(),
            group_id: self.group_id.to_string(),
            group: self.group.to_string(),
            run_id: self.run_id.clone(),
            cancel: self.cancel.clone(),
            workdir: self.workdir.map(std::path::Path::to_path_buf),
            execution: self.execution.cloned(),
            guard: self.guard.clone(),
            iteration: self.iteration,
            agent: agent.to_string(),
        });
        crate::providers::PermissionAsker::new(move |request| {
            let me = Arc::clone(&me);
            Box::pin(async move { me.context().agent_permission(&me.agent, &request).await })
        })
    }
}

/// A call a `pre_tool_use` hook denied: its result.
fn blocked_by_hook(hook: &str, reason: &str) -> String {
    format!("blocked by hook `{hook}`: {reason}")
}

fn cancelled_note() -> String {
    crate::tools::CANCELLED_RESULT.to_string()
}
