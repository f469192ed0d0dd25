//! What a TUI front end asks of the host's engine ([`EngineCall`]): the same engine calls the
//! TUI makes when it owns the data dir, with the runs it starts using its profile (its
//! configuration and environment) and asking their tool approvals through it (the TUI that
//! shows the run, or the next one opened, answers).

use std::future::Future;
use std::sync::Arc;

use crate::engine::events::RunKey;
use crate::engine::{Engine, EngineError, Profile, ReflectionRequest, RunOverrides};
use crate::tools::ApprovalPolicy;

use super::protocol::EngineCall;

/// The run `call` starts, if it starts one (so `huddle ps` can say who started it).
pub(super) fn run_started_by(call: &EngineCall) -> Option<RunKey> {
    match call {
        EngineCall::Chat { session_id, .. } => Some(RunKey::chat(session_id.as_str())),
        EngineCall::RunGroup { group_id, .. }
        | EngineCall::QueueMessage { group_id, .. }
        | EngineCall::ResumeCycle { group_id } => Some(RunKey::team(group_id.as_str())),
        EngineCall::ResumeReflection { session_id } | EngineCall::Reflect { session_id, .. } => {
            Some(RunKey::Reflection {
                session_id: session_id.clone(),
            })
        }
        _ => None,
    }
}

/// Carries out `call`; why it was refused otherwise (the TUI shows it).
pub(super) fn carry_out(
    engine: &Engine,
    profile: Result<Option<Arc<Profile>>, String>,
    call: EngineCall,
) -> Result<(), String> {
    let started = |scope: &str| -> Result<Scope, String> {
        Ok(Scope {
            engine: engine.clone(),
            id: scope.to_string(),
            profile: profile.clone()?,
        })
    };
    match call {
        EngineCall::Chat {
            session_id,
            prompt,
            attachments,
        } => {
            let scope = started(&session_id)?;
            let turn = engine
                .start_chat_with(&session_id, prompt, None, attachments)
                .map_err(|e| e.to_string())?;
            scope.spawn(turn);
        }
        EngineCall::RunGroup {
            group_id,
            prompt,
            attachments,
        } => {
            let scope = started(&group_id)?;
            let overrides = RunOverrides {
                attachments,
                ..RunOverrides::default()
            };
            match engine.start_group(&group_id, prompt.clone(), overrides) {
                Ok(run) => scope.spawn(run),
                // Started meanwhile (by another front end): the text goes to the run going.
                Err(EngineError::AlreadyRunning(_)) if engine.queue_message(&group_id, prompt) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        EngineCall::QueueMessage { group_id, text } => {
            if !engine.queue_message(&group_id, text.clone()) {
                // The run ended in between: the message starts a new one.
                return carry_out(
                    engine,
                    profile,
                    EngineCall::RunGroup {
                        group_id,
                        prompt: text,
                        attachments: Vec::new(),
                    },
                );
            }
        }
        EngineCall::ResumeCycle { group_id } => {
            let scope = started(&group_id)?;
            let run = engine
                .start_resume(&group_id, RunOverrides::default())
                .map_err(|e| e.to_string())?;
            scope.spawn(run);
        }
        EngineCall::ResumeReflection { session_id } => {
            let scope = started(&session_id)?;
            let run = engine
                .start_reflection_resume(&session_id)
                .map_err(|e| e.to_string())?;
            scope.spawn(run);
        }
        EngineCall::Reflect {
            session_id,
            goal,
            max_iterations,
        } => {
            let scope = started(&session_id)?;
            let request = ReflectionRequest {
                goal,
                max_iterations,
                evaluator_model: None,
                model_override: None,
            };
            let run = engine
                .start_reflection(&session_id, request)
                .map_err(|e| e.to_string())?;
            scope.spawn(run);
        }
        EngineCall::NoteMember { session_id, text } => {
            engine.note_member(&session_id, text).map_err(|e| e.to_string())?;
        }
        EngineCall::Pause { key } => {
            engine.pause(&key);
        }
        EngineCall::Resume { key } => {
            engine.resume(&key);
        }
        EngineCall::Stop { key } => {
            engine.stop(&key);
        }
        EngineCall::StopSession { session_id } => {
            engine.stop_session(&session_id);
        }
        EngineCall::AnswerApproval {
            approval_id,
            decision,
        } => {
            // Settled meanwhile (its run stopped, another front end answered): its decided
            // event says so.
            engine.answer_approval(approval_id, decision);
        }
        EngineCall::AnswerRelay { group_id, answer } => {
            engine.answer_relay(&group_id, answer);
        }
    }
    Ok(())
}

/// A run a TUI started: its group's or session's profile and approvals are the TUI's until
/// it ends.
struct Scope {
    engine: Engine,
    id: String,
    profile: Option<Arc<Profile>>,
}

impl Scope {
    fn spawn<T: Send + 'static>(self, run: impl Future<Output = T> + Send + 'static) {
        let Scope { engine, id, profile } = self;
        engine.set_scoped_approval(&id, Some(ApprovalPolicy::Ask));
        if profile.is_some() {
            engine.set_scoped_profile(&id, profile);
        }
        tokio::spawn(async move {
            run.await;
            engine.set_scoped_approval(&id, None);
            engine.set_scoped_profile(&id, None);
        });
    }
}
