//! The runs the UI knows of, from the engine's `run_started` / `run_ended` events: one map,
//! keyed by run id, from which "is this session busy", "is this team running" and "is this
//! reflection paused" are answered. Pause state is what the engine confirmed (`cycle_paused`,
//! `cycle_resumed`); a request the engine has not confirmed yet is shown as pending.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::engine::events::{EngineEvent, EventKind, RunId, RunKey};
use crate::model::{GroupId, SessionId};
use crate::tui::cycle_view::LimitWaitRow;

/// What a pause or stop request is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    Pausing,
    Resuming,
    Stopping,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunState {
    pub key: RunKey,
    pub group_id: GroupId,
    /// Confirmed by the engine.
    pub paused: bool,
    pub pending: Option<Pending>,
    /// Sessions of this run with a turn in flight.
    pub turns: HashSet<SessionId>,
    /// Its turns waiting for a rate or usage limit (one a session).
    pub waits: Vec<LimitWaitRow>,
}

impl RunState {
    /// Paused as the user sees it: what they asked for while the engine has not confirmed it
    /// yet, else what the engine confirmed.
    pub fn paused_as_shown(&self) -> bool {
        match self.pending {
            Some(Pending::Pausing) => true,
            Some(Pending::Resuming) => false,
            _ => self.paused,
        }
    }
}

#[derive(Debug, Default)]
pub struct Runs {
    runs: HashMap<RunId, RunState>,
}

impl Runs {
    /// Follows one engine event. Returns the key of a run that just ended.
    pub fn apply(&mut self, event: &EngineEvent) -> Option<RunKey> {
        self.apply_at(event, Instant::now())
    }

    /// [`Runs::apply`] for an event that came at `now` (a limit wait counts down from it).
    pub fn apply_at(&mut self, event: &EngineEvent, now: Instant) -> Option<RunKey> {
        let run_id = event.run_id.as_deref()?;
        match &event.kind {
            EventKind::RunStarted { key } => {
                self.runs.insert(
                    run_id.to_string(),
                    RunState {
                        key: key.clone(),
                        group_id: event.group_id.to_string(),
                        paused: false,
                        pending: None,
                        turns: HashSet::new(),
                        waits: Vec::new(),
                    },
                );
            }
            EventKind::RunEnded { key, .. } => {
                self.runs.remove(run_id);
                return Some(key.clone());
            }
            EventKind::CyclePaused => {
                if let Some(r) = self.runs.get_mut(run_id) {
                    r.paused = true;
                    r.pending = r.pending.filter(|p| *p == Pending::Stopping);
                }
            }
            EventKind::CycleResumed => {
                if let Some(r) = self.runs.get_mut(run_id) {
                    r.paused = false;
                    r.pending = r.pending.filter(|p| *p == Pending::Stopping);
                }
            }
            EventKind::TurnStarted { session_id, .. } => {
                if let Some(r) = self.runs.get_mut(run_id) {
                    r.turns.insert(session_id.to_string());
                }
            }
            EventKind::TurnFinished { session_id, .. } => {
                if let Some(r) = self.runs.get_mut(run_id) {
                    r.turns.remove(&**session_id);
                    r.waits.retain(|w| w.session_id != **session_id);
                }
            }
            EventKind::LimitWait { session_id, .. } => {
                if let Some(r) = self.runs.get_mut(run_id) {
                    r.waits.retain(|w| w.session_id != *session_id);
                    r.waits.extend(LimitWaitRow::of(&event.kind, now));
                }
            }
            EventKind::LimitWaitOver { session_id, .. } => {
                if let Some(r) = self.runs.get_mut(run_id) {
                    r.waits.retain(|w| w.session_id != *session_id);
                }
            }
            _ => {}
        }
        None
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The session's turn waiting for a limit, in whichever run it is.
    pub fn limit_wait(&self, session_id: &str) -> Option<&LimitWaitRow> {
        self.runs
            .values()
            .flat_map(|r| &r.waits)
            .find(|w| w.session_id == session_id)
    }

    /// The first turn waiting for a limit in a run of the group (its team run, a chat or
    /// reflection of one of its sessions), and how many wait in all.
    pub fn group_limit_wait(&self, group_id: &str) -> Option<(&LimitWaitRow, usize)> {
        let mut waits = self
            .runs
            .values()
            .filter(|r| r.group_id == group_id)
            .flat_map(|r| &r.waits);
        let first = waits.next()?;
        Some((first, 1 + waits.count()))
    }

    /// How many turns wait for a limit, in every run.
    pub fn limit_waiting(&self) -> usize {
        self.runs.values().map(|r| r.waits.len()).sum()
    }

    pub fn iter(&self) -> impl Iterator<Item = &RunState> {
        self.runs.values()
    }

    /// True for an event of a direct chat with one session (what the engine's `run_started` of
    /// the run said; a `run_ended` says it itself): a chat with a team member is the member's,
    /// never part of the team's run.
    pub fn is_chat(&self, event: &EngineEvent) -> bool {
        let key = match &event.kind {
            EventKind::RunStarted { key } | EventKind::RunEnded { key, .. } => Some(key),
            _ => event
                .run_id
                .as_deref()
                .and_then(|id| self.runs.get(id))
                .map(|r| &r.key),
        };
        matches!(key, Some(RunKey::Chat { .. }))
    }

    /// The run under an exclusive key (a team run, a reflection).
    pub fn get(&self, key: &RunKey) -> Option<&RunState> {
        self.runs.values().find(|r| &r.key == key)
    }

    fn get_mut(&mut self, key: &RunKey) -> Option<&mut RunState> {
        self.runs.values_mut().find(|r| &r.key == key)
    }

    /// The group's team run, if one is going.
    pub fn team(&self, group_id: &str) -> Option<&RunState> {
        self.get(&RunKey::team(group_id))
    }

    /// The session's reflection, if one is going.
    pub fn reflection(&self, session_id: &str) -> Option<&RunState> {
        self.get(&RunKey::reflection(session_id))
    }

    /// True while a run of the session (chat, reflection) is registered or one of its turns is
    /// in flight in any run.
    pub fn session_busy(&self, session_id: &str) -> bool {
        self.runs
            .values()
            .any(|r| r.key.session_id() == Some(session_id) || r.turns.contains(session_id))
    }

    /// True while any run of the group (a team run, or a chat or reflection of one of its
    /// sessions) is registered.
    pub fn group_busy(&self, group_id: &str) -> bool {
        self.runs.values().any(|r| r.group_id == group_id)
    }

    /// Records a pause, resume or stop request until the engine confirms it.
    pub fn request(&mut self, key: &RunKey, pending: Pending) {
        if let Some(r) = self.get_mut(key) {
            r.pending = Some(pending);
        }
    }

    /// True while the session has chat turns registered (stoppable as a chat).
    pub fn chatting(&self, session_id: &str) -> bool {
        let key = RunKey::chat(session_id);
        self.runs.values().any(|r| r.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(run: &str, group: &str, kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: group.into(),
            group: "G".into(),
            run_id: Some(run.into()),
            execution: None,
            kind,
        }
    }

    #[test]
    fn busy_follows_run_and_turn_events() {
        let mut runs = Runs::default();
        runs.apply(&event(
            "r1",
            "g",
            EventKind::RunStarted {
                key: RunKey::team("g"),
            },
        ));
        assert!(runs.team("g").is_some() && runs.group_busy("g"));
        assert!(!runs.session_busy("s"));
        runs.apply(&event(
            "r1",
            "g",
            EventKind::TurnStarted {
                session_id: "s".into(),
                session: "s".into(),
                generation: 1,
                prompt: None,
            },
        ));
        assert!(runs.session_busy("s"));
        let ended = runs.apply(&event(
            "r1",
            "g",
            EventKind::RunEnded {
                key: RunKey::team("g"),
                outcome: None,
                iterations: 0,
                failed: None,
                totals: None,
            },
        ));
        assert_eq!(ended, Some(RunKey::team("g")));
        assert!(runs.is_empty() && !runs.session_busy("s") && !runs.group_busy("g"));
    }

    #[test]
    fn a_pause_is_pending_until_the_engine_confirms_it() {
        let mut runs = Runs::default();
        let key = RunKey::reflection("s");
        runs.apply(&event("r", "g", EventKind::RunStarted { key: key.clone() }));
        runs.request(&key, Pending::Pausing);
        assert_eq!(runs.reflection("s").unwrap().pending, Some(Pending::Pausing));
        assert!(!runs.reflection("s").unwrap().paused);
        runs.apply(&event("r", "g", EventKind::CyclePaused));
        assert!(runs.reflection("s").unwrap().paused);
        assert_eq!(runs.reflection("s").unwrap().pending, None);
        runs.request(&key, Pending::Stopping);
        runs.apply(&event("r", "g", EventKind::CycleResumed));
        assert_eq!(runs.reflection("s").unwrap().pending, Some(Pending::Stopping));
        assert!(!runs.chatting("s") && runs.session_busy("s"));
    }
}
