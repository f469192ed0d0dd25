//! The host's table of runs going, kept from the engine's events, and who follows them.
//!
//! The table and its followers sit behind one lock with the events that change them: a front
//! end that attaches gets the count of a run's events so far and its place among the followers
//! at the same instant, so the events it reads back from the run file and those pushed to it
//! live neither overlap nor leave a gap.

use std::collections::{BTreeMap, VecDeque};

use chrono::Utc;

use crate::engine::events::{EngineEvent, EventKind, RunKey};
use crate::model::{Organization, RelayPhase};

use super::outbox::Outbox;
use super::protocol::{HostMessage, RunInfo, RunState};

/// One run going.
struct Entry {
    info: RunInfo,
    /// Its events so far that its run file records (non-streaming, with its run id).
    logged: usize,
    /// Tool approvals it waits for, by id: what each is about.
    approvals: BTreeMap<u64, String>,
    /// The turn of a relay draft it waits on.
    draft: Option<u32>,
    /// Its turns waiting for a rate or usage limit, by session id: who waits for what.
    limits: BTreeMap<String, String>,
    paused: bool,
    stopping: bool,
}

impl Entry {
    fn info(&self) -> RunInfo {
        let mut info = self.info.clone();
        let waiting: Vec<String> = self
            .approvals
            .values()
            .cloned()
            .chain(self.draft.map(|turn| format!("its relay draft of turn {turn}")))
            .chain(self.limits.values().cloned())
            .collect();
        info.waiting_for = (!waiting.is_empty()).then(|| waiting.join(", "));
        info.state = if self.stopping {
            RunState::Stopping
        } else if !waiting.is_empty() {
            RunState::Waiting
        } else if self.paused {
            RunState::Paused
        } else {
            RunState::Running
        };
        info
    }
}

/// Who gets which events.
enum Filter {
    Every,
    Run(String),
}

struct Follower {
    filter: Filter,
    tx: Outbox,
}

#[derive(Default)]
pub struct Table {
    runs: BTreeMap<String, Entry>,
    followers: Vec<Follower>,
    /// Who started runs the table has not seen start yet (a front end may hear of its run's
    /// start before the table does).
    fronts: BTreeMap<String, String>,
    /// Who is about to start a run of a group or session (a TUI's engine call: the run's id
    /// is not known yet).
    expected: VecDeque<(RunKey, String)>,
    /// The last runs that ended (a few), so a front end waiting for its run to be listed knows
    /// it came and went.
    ended: VecDeque<String>,
}

/// How many ended runs the table remembers by id.
const ENDED_KEPT: usize = 64;

impl Table {
    /// Takes one event into account and hands it to the followers it concerns. True when a run
    /// ended (the host may now be idle).
    pub fn apply(&mut self, event: &EngineEvent) -> bool {
        let mut ended = false;
        if let Some(run_id) = event.run_id.as_deref() {
            if let EventKind::RunStarted { key } = &event.kind {
                let mut entry = new_entry(run_id, key, event);
                entry.info.front = self.fronts.remove(run_id).or_else(|| self.take_expected(key));
                self.runs.insert(run_id.to_string(), entry);
            }
            if let Some(entry) = self.runs.get_mut(run_id) {
                if !event.kind.is_streaming() {
                    entry.logged += 1;
                }
                update(entry, &event.kind);
            }
            if let EventKind::RunEnded { .. } = &event.kind {
                ended = self.runs.remove(run_id).is_some();
                self.fronts.remove(run_id);
                if self.ended.len() >= ENDED_KEPT {
                    self.ended.pop_front();
                }
                self.ended.push_back(run_id.to_string());
            }
        }
        self.deliver(event, ended);
        ended
    }

    fn deliver(&mut self, event: &EngineEvent, ended: bool) {
        if self.followers.is_empty() {
            return;
        }
        let run_id = event.run_id.as_deref();
        let front = run_id
            .and_then(|id| self.runs.get(id))
            .and_then(|e| e.info.front.clone());
        self.followers.retain(|f| {
            let wanted = match &f.filter {
                Filter::Every => true,
                Filter::Run(id) => Some(id.as_str()) == run_id,
            };
            if !wanted {
                return !f.tx.is_closed();
            }
            let sent = f.tx.send(HostMessage::event_of(event.clone(), front.as_deref()));
            // A run's follower is done with its end.
            let done = ended && matches!(f.filter, Filter::Run(_));
            sent && !done
        });
    }

    /// Every event from now on goes to `tx` too.
    pub fn follow_all(&mut self, tx: Outbox) {
        self.followers.push(Follower {
            filter: Filter::Every,
            tx,
        });
    }

    /// Every event from now on goes to `tx` too; returns every run going and how many of its
    /// events its run file holds so far (what to read back first).
    pub fn follow_all_from_start(&mut self, tx: Outbox) -> Vec<(RunInfo, usize)> {
        self.follow_all(tx);
        self.runs.values().map(|e| (e.info(), e.logged)).collect()
    }

    /// The run's events from now on go to `tx` (until it ends); returns it as it is now and how
    /// many of its events its run file holds so far. `None` when it is not going.
    pub fn follow_run(&mut self, run_id: &str, tx: Outbox) -> Option<(RunInfo, usize)> {
        let entry = self.runs.get(run_id)?;
        let now = (entry.info(), entry.logged);
        self.followers.push(Follower {
            filter: Filter::Run(run_id.to_string()),
            tx,
        });
        Some(now)
    }

    /// The runs going, oldest first.
    pub fn infos(&self) -> Vec<RunInfo> {
        let mut runs: Vec<RunInfo> = self.runs.values().map(Entry::info).collect();
        runs.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        runs
    }

    /// True once the table has seen the run start (it may have ended since).
    pub fn has_seen(&self, run_id: &str) -> bool {
        self.runs.contains_key(run_id) || self.ended.iter().any(|id| id == run_id)
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// True while the run is listed (it has not ended, or its end is not in its file yet).
    pub fn is_going(&self, run_id: &str) -> bool {
        self.runs.contains_key(run_id)
    }

    pub fn get(&self, run_id: &str) -> Option<RunInfo> {
        self.runs.get(run_id).map(Entry::info)
    }

    /// Says who started a run (`huddle run (pid N)`, `detached`...).
    pub fn set_front(&mut self, run_id: &str, front: String) {
        match self.runs.get_mut(run_id) {
            Some(e) => e.info.front = Some(front),
            None => {
                // (One that ended before it was told stays here: a few at most.)
                if self.fronts.len() > 64 {
                    self.fronts.clear();
                }
                self.fronts.insert(run_id.to_string(), front);
            }
        }
    }

    /// The front end other than the TUIs that `call` (a TUI's answer to an approval or a relay
    /// draft) would answer for: the run's asker, which the host leaves the answer to.
    pub fn asked_elsewhere_of(&self, call: &super::protocol::EngineCall) -> Option<String> {
        use super::protocol::EngineCall;
        let run = match call {
            EngineCall::AnswerApproval { approval_id, .. } => {
                self.runs.values().find(|e| e.approvals.contains_key(approval_id))
            }
            EngineCall::AnswerRelay { group_id, .. } => self
                .runs
                .values()
                .find(|e| e.info.key == RunKey::team(group_id.as_str())),
            _ => None,
        }?;
        super::protocol::asked_elsewhere(run.info.front.as_deref())
    }

    /// `front` is about to start a run of `key`: the next run of it to start is said to be its.
    pub fn expect_front(&mut self, key: &RunKey, front: String) {
        self.forget_front(key);
        if self.expected.len() >= ENDED_KEPT {
            self.expected.pop_front();
        }
        self.expected.push_back((key.clone(), front));
    }

    /// The run `expect_front` announced did not start.
    pub fn forget_front(&mut self, key: &RunKey) {
        self.expected.retain(|(k, _)| k != key);
    }

    fn take_expected(&mut self, key: &RunKey) -> Option<String> {
        let at = self.expected.iter().position(|(k, _)| k == key)?;
        self.expected.remove(at).map(|(_, front)| front)
    }

    /// Marks a run as asked to stop.
    pub fn mark_stopping(&mut self, run_id: &str) {
        if let Some(e) = self.runs.get_mut(run_id) {
            e.stopping = true;
        }
    }

    /// True while a team run of the group is going and asked to stop (a new run of it waits).
    pub fn team_stopping(&self, group_id: &str) -> bool {
        self.runs
            .values()
            .any(|e| e.stopping && e.info.key == RunKey::team(group_id))
    }

    /// The runs a target names: a run id, or the start of exactly one; else a group's name (or
    /// id): its runs. An error says what exists; for a group with nothing going, its last run
    /// (`last_run` of its id: the newest on disk) and where to read it.
    pub fn resolve(
        &self,
        target: &str,
        org: &Organization,
        last_run: impl FnOnce(&str) -> Option<String>,
    ) -> Result<Vec<String>, String> {
        let target = target.trim();
        if target.is_empty() {
            return Err("say which run: its id (see `huddle ps`) or its group's name".into());
        }
        if self.runs.contains_key(target) {
            return Ok(vec![target.to_string()]);
        }
        let by_prefix: Vec<&String> = self.runs.keys().filter(|id| id.starts_with(target)).collect();
        if by_prefix.len() == 1 {
            return Ok(vec![by_prefix[0].clone()]);
        }
        if by_prefix.len() > 1 {
            return Err(format!(
                "`{target}` is the start of {} runs' ids: give more of it",
                by_prefix.len()
            ));
        }
        let group_id = org
            .group_by_name(target)
            .map(|g| g.id.clone())
            .or_else(|| org.group(target).map(|g| g.id.clone()));
        let Some(group_id) = group_id else {
            // An ended run's id (or the start of only one): it has ended. The start of several
            // names none of them (review 23-3 nit E1: `2026` named one at random).
            let ended: Vec<&String> = self
                .ended
                .iter()
                .rev()
                .filter(|id| id.starts_with(target))
                .collect();
            match ended.as_slice() {
                [] => {}
                [id] => return Err(has_ended(id)),
                many => {
                    const SHOWN: usize = 3;
                    let mut list = many
                        .iter()
                        .take(SHOWN)
                        .map(|id| format!("`{id}`"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    if many.len() > SHOWN {
                        list.push_str(&format!(" and {} more", many.len() - SHOWN));
                    }
                    return Err(format!(
                        "no run `{target}` runs: it is the start of {} ended runs' ids ({list}; newest first)",
                        many.len()
                    ));
                }
            }
            return Err(if self.runs.is_empty() {
                format!("no run `{target}`: nothing runs")
            } else {
                format!("no run or group `{target}` (`huddle ps` lists the runs going)")
            });
        };
        // The team run first, then the group's chats and reflections.
        let mut ids: Vec<(bool, String)> = self
            .runs
            .values()
            .filter(|e| e.info.group_id == group_id)
            .map(|e| (!matches!(e.info.key, RunKey::Team { .. }), e.info.run_id.clone()))
            .collect();
        ids.sort();
        if ids.is_empty() {
            return Err(match last_run(&group_id) {
                Some(id) => format!("nothing of group `{target}` runs: its last {}", has_ended(&id)),
                None => format!("nothing of group `{target}` runs"),
            });
        }
        Ok(ids.into_iter().map(|(_, id)| id).collect())
    }

    /// A run's mode, known before its cycle says it (a team's, from the organization).
    pub fn note_mode(&mut self, run_id: &str, mode: crate::model::Mode) {
        if let Some(entry) = self.runs.get_mut(run_id) {
            entry.info.mode.get_or_insert(mode);
        }
    }

    /// What keeps the host busy, in words (for a front end that waits for it to go).
    pub fn busy_lines(&self) -> Vec<String> {
        self.runs
            .values()
            .map(|e| {
                let i = e.info();
                format!("{} ({}, {})", i.run_id, i.group, i.state.as_str())
            })
            .collect()
    }
}

/// A front end's label (`tui (pid 7576)`) as `huddle ps` shows it: `tui (pid 7576, gone)` once
/// `alive` says its process has ended (review 23-3 nit E2: a TUI that quit leaving its runs
/// going was still named as if it were there).
pub fn front_now(label: &str, alive: impl Fn(i32) -> bool) -> String {
    let pid = label
        .rsplit_once("(pid ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .and_then(|n| n.parse::<i32>().ok())
        .filter(|&n| n > 0);
    match pid {
        Some(pid) if !alive(pid) => format!("{}, gone)", &label[..label.len() - 1]),
        _ => label.to_string(),
    }
}

/// True while process `pid` exists (signal 0 checks without sending; a process of another user
/// exists too).
pub fn process_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only reports whether `pid` exists.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Why an ended run cannot be followed or stopped, and where to read what it did.
pub fn has_ended(run_id: &str) -> String {
    format!("run `{run_id}` has ended (`huddle trace --run {run_id}` shows what it did)")
}

fn new_entry(run_id: &str, key: &RunKey, event: &EngineEvent) -> Entry {
    Entry {
        info: RunInfo {
            run_id: run_id.to_string(),
            key: key.clone(),
            group_id: event.group_id.to_string(),
            group: event.group.to_string(),
            session: None,
            mode: None,
            started_at: Utc::now(),
            tokens: 0,
            state: RunState::Running,
            waiting_for: None,
            front: None,
        },
        logged: 0,
        approvals: BTreeMap::new(),
        draft: None,
        limits: BTreeMap::new(),
        paused: false,
        stopping: false,
    }
}

fn update(entry: &mut Entry, kind: &EventKind) {
    match kind {
        EventKind::CycleStarted { mode, .. } => entry.info.mode = Some(*mode),
        EventKind::TurnStarted { session, .. } if entry.info.key.session_id().is_some() => {
            entry.info.session = Some(session.to_string());
        }
        EventKind::TurnFinished { usage: Some(u), .. } => {
            entry.info.tokens += u.input_tokens + u.output_tokens;
        }
        EventKind::ToolApprovalRequested {
            approval_id,
            session,
            server,
            tool,
            ..
        } => {
            entry.approvals.insert(
                *approval_id,
                format!("approval #{approval_id} of {server}/{tool} for {session}"),
            );
        }
        EventKind::ToolApprovalDecided { approval_id, .. } => {
            entry.approvals.remove(approval_id);
        }
        EventKind::RelayDraft { turn, waiting, .. } => {
            entry.draft = waiting.then_some(*turn);
        }
        EventKind::RelaySent { .. } | EventKind::RelayTakeOver { .. } => entry.draft = None,
        EventKind::RelayState { state, .. } if *state != RelayPhase::ReadyToSend => entry.draft = None,
        EventKind::CyclePaused => entry.paused = true,
        EventKind::CycleResumed => entry.paused = false,
        EventKind::LimitWait {
            session_id,
            session,
            provider,
            until,
            ..
        } => {
            entry.limits.insert(
                session_id.clone(),
                crate::describe::cycle::limit_waiter(session, provider, *until),
            );
        }
        EventKind::LimitWaitOver { session_id, .. } => {
            entry.limits.remove(session_id);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CycleOutcome, Mode, Usage};

    fn event(run_id: &str, kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: "gid".into(),
            group: "Ops".into(),
            run_id: Some(run_id.into()),
            execution: None,
            kind,
        }
    }

    #[test]
    fn a_run_is_listed_from_its_start_to_its_end_with_what_it_waits_for() {
        let mut table = Table::default();
        let r = "20260101T000000000Z-00000001";
        table.apply(&event(
            r,
            EventKind::RunStarted {
                key: RunKey::team("gid"),
            },
        ));
        table.apply(&event(
            r,
            EventKind::CycleStarted {
                mode: Mode::Broadcast,
                max_iterations: 1,
            },
        ));
        table.apply(&event(
            r,
            EventKind::TurnFinished {
                session_id: "s".into(),
                session: "a".into(),
                generation: 1,
                success: true,
                interrupted: false,
                duration_ms: 1,
                usage: Some(Usage {
                    input_tokens: 10,
                    output_tokens: 5,
                    ..Usage::default()
                }),
                cost_usd: None,
                error: None,
                message: None,
            },
        ));
        table.apply(&event(
            r,
            EventKind::ToolApprovalRequested {
                session_id: "s".into(),
                session: "a".into(),
                approval_id: 4,
                call_id: "c".into(),
                server: "time".into(),
                tool: "now".into(),
                arguments: "{}".into(),
                reason: None,
                options: Vec::new(),
            },
        ));
        let info = &table.infos()[0];
        assert_eq!(info.mode, Some(Mode::Broadcast));
        assert_eq!(info.tokens, 15);
        assert_eq!(info.state, RunState::Waiting);
        assert_eq!(info.waiting_for.as_deref(), Some("approval #4 of time/now for a"));
        // A turn waiting for a limit is waited for too, until its wait is over.
        let until = chrono::DateTime::parse_from_rfc3339("2026-11-28T14:05:00Z")
            .expect("a time")
            .with_timezone(&Utc);
        table.apply(&event(
            r,
            EventKind::LimitWait {
                session_id: "sb".into(),
                session: "b".into(),
                provider: "openai".into(),
                until,
                wait_ms: 600_000,
                reason: "429".into(),
            },
        ));
        assert_eq!(
            table.infos()[0].waiting_for.as_deref(),
            Some("approval #4 of time/now for a, b: waiting until 14:05 UTC for openai limit")
        );
        table.apply(&event(
            r,
            EventKind::LimitWaitOver {
                session_id: "sb".into(),
                session: "b".into(),
                waited_ms: 1,
            },
        ));
        assert_eq!(
            table.infos()[0].waiting_for.as_deref(),
            Some("approval #4 of time/now for a")
        );
        let org = Organization::default();
        assert_eq!(
            table.resolve("2026", &org, |_| None).unwrap(),
            vec![r.to_string()]
        );
        assert!(
            table
                .resolve("nope", &org, |_| None)
                .unwrap_err()
                .contains("huddle ps")
        );
        let (tx, mut rx) = crate::host::outbox::outbox();
        let (_, logged) = table.follow_run(r, tx).unwrap();
        assert_eq!(logged, 6, "the two limit events are logged too");
        let ended = table.apply(&event(
            r,
            EventKind::RunEnded {
                key: RunKey::team("gid"),
                outcome: Some(CycleOutcome::Completed),
                iterations: 1,
                failed: None,
                totals: None,
            },
        ));
        assert!(ended && table.is_empty());
        assert!(table.has_seen(r), "an ended run was seen");
        assert!(!table.has_seen("20260101T000000000Z-00000002"));
        let gone = table.resolve("2026", &org, |_| None).unwrap_err();
        assert!(
            gone.contains("has ended") && gone.contains(&format!("huddle trace --run {r}")),
            "{gone}"
        );
        let line = rx.try_recv().unwrap_or_default();
        assert!(line.contains("\"run_ended\""), "{line}");
        assert!(table.followers.is_empty(), "a run's follower goes with it");
    }

    /// Review 23-2 nit E4: `huddle stop GROUP` of a group whose run has ended names its last
    /// run and where to read it, as `huddle stop RUN` does.
    #[test]
    fn a_group_with_nothing_going_names_its_last_run() {
        let table = Table::default();
        let mut org = Organization::default();
        let mut group = crate::model::Group::new("Review", crate::model::GroupKind::Team);
        group.id = "gid".into();
        org.groups.push(group);
        let last = "20260101T000000000Z-00000009";
        let why = table
            .resolve("Review", &org, |g| (g == "gid").then(|| last.to_string()))
            .unwrap_err();
        assert_eq!(
            why,
            format!(
                "nothing of group `Review` runs: its last run `{last}` has ended (`huddle trace --run {last}` shows what it did)"
            )
        );
        assert_eq!(
            table.resolve("Review", &org, |_| None).unwrap_err(),
            "nothing of group `Review` runs"
        );
    }

    /// Review 23-2 nit E5: a run's mode is listed from its start, before its cycle says it.
    #[test]
    fn a_runs_mode_is_listed_from_its_start() {
        let mut table = Table::default();
        let r = "20260101T000000000Z-00000001";
        table.apply(&event(
            r,
            EventKind::RunStarted {
                key: RunKey::team("gid"),
            },
        ));
        table.note_mode(r, Mode::OrchestratorReflect);
        table.note_mode("20260101T000000000Z-00000002", Mode::Broadcast);
        let listed = table.infos();
        assert_eq!(listed[0].mode, Some(Mode::OrchestratorReflect));
    }

    #[test]
    fn a_run_a_front_end_announced_is_said_to_be_its_and_only_that_one() {
        let mut table = Table::default();
        let team = RunKey::team("gid");
        table.expect_front(&team, "tui (pid 7)".into());
        table.apply(&event("r1", EventKind::RunStarted { key: team.clone() }));
        assert_eq!(
            table.get("r1").and_then(|i| i.front).as_deref(),
            Some("tui (pid 7)")
        );
        table.apply(&event("r2", EventKind::RunStarted { key: team.clone() }));
        assert_eq!(table.get("r2").and_then(|i| i.front), None, "taken once");
        table.expect_front(&team, "tui (pid 8)".into());
        table.forget_front(&team);
        table.apply(&event("r3", EventKind::RunStarted { key: team }));
        assert_eq!(
            table.get("r3").and_then(|i| i.front),
            None,
            "a refused call leaves nothing"
        );
    }

    /// What a run another front end started asks goes to the TUIs marked as asked there, and a
    /// TUI's answer to it is found to be that front end's to give (review 23-3 H); a TUI's run
    /// asks the TUIs.
    #[test]
    fn what_a_run_of_another_front_end_asks_is_marked_as_asked_there() {
        use crate::host::protocol::EngineCall;
        let mut table = Table::default();
        let (tx, mut rx) = crate::host::outbox::outbox();
        table.follow_all(tx);
        table.expect_front(&RunKey::team("gid"), "huddle mcp (pid 9)".into());
        table.apply(&event(
            "r1",
            EventKind::RunStarted {
                key: RunKey::team("gid"),
            },
        ));
        let asks = |id: u64| EventKind::ToolApprovalRequested {
            session_id: "s".into(),
            session: "one".into(),
            approval_id: id,
            call_id: "c".into(),
            server: "time".into(),
            tool: "now".into(),
            arguments: "{}".into(),
            reason: None,
            options: Vec::new(),
        };
        table.apply(&event("r1", asks(1)));
        let _started = rx.try_recv().expect("run_started");
        let line = rx.try_recv().expect("the approval");
        assert!(
            line.contains("\"asked_elsewhere\":\"huddle mcp (pid 9)\""),
            "{line}"
        );
        let answer = |approval_id| EngineCall::AnswerApproval {
            approval_id,
            decision: crate::tools::Decision::ApproveOnce,
        };
        assert_eq!(
            table.asked_elsewhere_of(&answer(1)).as_deref(),
            Some("huddle mcp (pid 9)")
        );
        // A TUI's run: the TUIs are asked, and answer.
        table.expect_front(&RunKey::team("g2"), "tui (pid 7)".into());
        let mut started = event(
            "r2",
            EventKind::RunStarted {
                key: RunKey::team("g2"),
            },
        );
        started.group_id = "g2".into();
        table.apply(&started);
        let mut asked = event("r2", asks(2));
        asked.group_id = "g2".into();
        table.apply(&asked);
        let _started = rx.try_recv().expect("run_started");
        let line = rx.try_recv().expect("the approval");
        assert!(!line.contains("asked_elsewhere"), "{line}");
        assert_eq!(table.asked_elsewhere_of(&answer(2)), None);
    }

    #[test]
    fn a_front_end_that_has_gone_is_said_so() {
        assert_eq!(front_now("tui (pid 7576)", |_| true), "tui (pid 7576)");
        assert_eq!(front_now("tui (pid 7576)", |p| p != 7576), "tui (pid 7576, gone)");
        assert_eq!(
            front_now("huddle run (pid 12)", |_| false),
            "huddle run (pid 12, gone)"
        );
        // No pid to check: as it is.
        assert_eq!(front_now("odd (pid x)", |_| false), "odd (pid x)");
        assert_eq!(front_now("mcp", |_| false), "mcp");
        assert!(process_alive(std::process::id() as i32));
    }

    #[test]
    fn the_table_remembers_only_the_last_ended_runs() {
        let mut table = Table::default();
        for n in 0..=ENDED_KEPT {
            let r = format!("run-{n}");
            let key = RunKey::team("gid");
            table.apply(&event(&r, EventKind::RunStarted { key: key.clone() }));
            assert!(table.has_seen(&r));
            table.apply(&event(
                &r,
                EventKind::RunEnded {
                    key,
                    outcome: Some(CycleOutcome::Completed),
                    iterations: 1,
                    failed: None,
                    totals: None,
                },
            ));
        }
        assert!(!table.has_seen("run-0"), "the oldest is forgotten");
        assert!(table.has_seen("run-1") && table.has_seen(&format!("run-{ENDED_KEPT}")));
        assert_eq!(table.ended.len(), ENDED_KEPT);
        // The start of several ended runs' ids names none of them, and lists the newest
        // (review 23-3 nit E1); an ended run's whole id names it.
        let org = Organization::default();
        let many = table.resolve("run-", &org, |_| None).unwrap_err();
        assert!(
            many.starts_with(&format!(
                "no run `run-` runs: it is the start of {ENDED_KEPT} ended runs' ids (`run-{ENDED_KEPT}`, `run-{}`, `run-{}` and {} more; newest first)",
                ENDED_KEPT - 1,
                ENDED_KEPT - 2,
                ENDED_KEPT - 3
            )),
            "{many}"
        );
        let last = format!("run-{ENDED_KEPT}");
        assert_eq!(
            table.resolve(&last, &org, |_| None).unwrap_err(),
            has_ended(&last)
        );
    }
}
