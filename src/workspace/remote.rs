//! The application layer reached over the host's socket: a front end that does not own the data
//! dir (the TUI as a host's front end) sends each edit as an [`EditCall`]; the host carries it
//! out with the front end's [`Edits`] (its configuration and repository) and answers with the
//! result and the organization after it, which the front end's copy takes at once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{EditError, Edits, Removal, RemovalReport};
use crate::model::{Memory, Mode, Organization, Preset, WorktreeStrategy};
use crate::store::OrgHandle;

/// One edit as it travels: the [`Edits`] method of the same name and its arguments.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "edit", rename_all = "snake_case")]
pub enum EditCall {
    AddEvaluator {
        group_id: String,
    },
    RemoveEvaluator {
        group_id: String,
    },
    CreateSession {
        group_id: String,
        name: String,
    },
    CreateTeam {
        preset: Box<Preset>,
    },
    CreateTeamWith {
        preset: Box<Preset>,
        strategy: WorktreeStrategy,
    },
    DeleteGroup {
        group_id: String,
    },
    DeleteSession {
        session_id: String,
    },
    DiscardInterrupted {
        group_id: String,
    },
    DiscardReflection {
        session_id: String,
    },
    ForkSession {
        session_id: String,
    },
    RemoveFiles {
        removal: Removal,
    },
    RenameGroup {
        group_id: String,
        name: String,
    },
    RenameSession {
        session_id: String,
        name: String,
    },
    Select {
        group_id: Option<String>,
        session_id: Option<String>,
    },
    SetFolded {
        group_id: String,
        folded: bool,
    },
    SetGroupModel {
        group_id: String,
        slug: String,
    },
    SetMaxIterations {
        group_id: String,
        text: String,
    },
    SetMemory {
        group_id: String,
        memory: Memory,
    },
    SetMode {
        group_id: String,
        mode: Mode,
    },
    SetSystemPrompt {
        session_id: String,
        text: String,
    },
    SupersedeLastExchange {
        session_id: String,
        from: String,
        why: String,
    },
    AddMember {
        group_id: String,
        name: String,
        model: String,
        system_prompt: String,
    },
    SetSessionModel {
        session_id: String,
        slug: String,
    },
    NewSessionConversation {
        session_id: String,
    },
    NewGroupConversation {
        group_id: String,
    },
    /// The sandbox label of a session's header (`Edits::sandbox_label`).
    SandboxLabel {
        session_id: String,
    },
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn value<T: Serialize>(result: T) -> serde_json::Value {
    serde_json::to_value(result).unwrap_or(serde_json::Value::Null)
}

impl Edits {
    /// Carries out an edit a front end sent (on the host; blocking: worktrees run git) and
    /// returns its result as the front end reads it back.
    pub fn apply(&self, call: EditCall) -> serde_json::Value {
        match call {
            EditCall::AddEvaluator { group_id } => value(self.add_evaluator(&group_id)),
            EditCall::RemoveEvaluator { group_id } => value(self.remove_evaluator(&group_id)),
            EditCall::CreateSession { group_id, name } => value(self.create_session(&group_id, &name)),
            EditCall::CreateTeam { preset } => value(self.create_team(&preset)),
            EditCall::CreateTeamWith { preset, strategy } => value(self.create_team_with(&preset, strategy)),
            EditCall::DeleteGroup { group_id } => value(self.delete_group(&group_id)),
            EditCall::DeleteSession { session_id } => value(self.delete_session(&session_id)),
            EditCall::DiscardInterrupted { group_id } => value(self.discard_interrupted(&group_id)),
            EditCall::DiscardReflection { session_id } => value(self.discard_reflection(&session_id)),
            EditCall::ForkSession { session_id } => value(self.fork_session(&session_id)),
            EditCall::RemoveFiles { removal } => value(self.remove_files(&removal)),
            EditCall::RenameGroup { group_id, name } => value(self.rename_group(&group_id, &name)),
            EditCall::RenameSession { session_id, name } => value(self.rename_session(&session_id, &name)),
            EditCall::Select { group_id, session_id } => {
                self.select(group_id.as_deref(), session_id.as_deref());
                serde_json::Value::Null
            }
            EditCall::SetFolded { group_id, folded } => {
                self.set_folded(&group_id, folded);
                serde_json::Value::Null
            }
            EditCall::SetGroupModel { group_id, slug } => value(self.set_group_model(&group_id, &slug)),
            EditCall::SetMaxIterations { group_id, text } => value(self.set_max_iterations(&group_id, &text)),
            EditCall::SetMemory { group_id, memory } => value(self.set_memory(&group_id, memory)),
            EditCall::SetMode { group_id, mode } => value(self.set_mode(&group_id, mode)),
            EditCall::SetSystemPrompt { session_id, text } => {
                value(self.set_system_prompt(&session_id, &text))
            }
            EditCall::SupersedeLastExchange {
                session_id,
                from,
                why,
            } => value(self.supersede_last_exchange(&session_id, &from, &why)),
            EditCall::AddMember {
                group_id,
                name,
                model,
                system_prompt,
            } => value(self.add_member(&group_id, &name, &model, &system_prompt)),
            EditCall::SetSessionModel { session_id, slug } => {
                value(self.set_session_model(&session_id, &slug))
            }
            EditCall::NewSessionConversation { session_id } => {
                value(self.new_session_conversation(&session_id))
            }
            EditCall::NewGroupConversation { group_id } => value(self.new_group_conversation(&group_id)),
            EditCall::SandboxLabel { session_id } => value(self.sandbox_label(&session_id)),
        }
    }
}

/// What a remote edit gives back when the host could not be asked.
pub(super) trait Remoted: DeserializeOwned {
    fn unreachable(why: String) -> Self;
}

impl<T: DeserializeOwned> Remoted for Result<T, EditError> {
    fn unreachable(why: String) -> Self {
        Err(EditError::Unanswered(why))
    }
}

impl Remoted for () {
    fn unreachable(why: String) {
        tracing::warn!("an edit was not made: {why}");
    }
}

impl Remoted for Option<String> {
    fn unreachable(_: String) -> Self {
        None
    }
}

impl Remoted for String {
    fn unreachable(why: String) -> Self {
        tracing::warn!("an edit was not made: {why}");
        String::new()
    }
}

impl Remoted for RemovalReport {
    fn unreachable(why: String) -> Self {
        tracing::warn!("files were not removed: {why}");
        RemovalReport {
            unanswered: Some(why),
            ..RemovalReport::default()
        }
    }
}

/// Sends one edit and waits for the host's answer: the result and the organization after it
/// with its version.
pub trait EditTransport: Send + Sync {
    fn call(&mut self, call: EditCall) -> Result<(serde_json::Value, Option<(Organization, u64)>), String>;
}

/// Sends an edit without waiting for its answer (the front end's link writes it; a reply that
/// carries a sandbox label comes back through [`RemoteEdits::take_label`]).
pub type Post = Box<dyn Fn(EditCall) + Send + Sync>;

/// A front end's link to the host's application layer, beside its copy of the organization.
/// What the front end shows (its selection, its folded groups) is its own: kept in the copy,
/// never a round trip to the host (a host that does not answer must not hold up the UI).
pub struct RemoteEdits {
    transport: Mutex<Box<dyn EditTransport>>,
    /// How edits nobody waits for go out; none until the front end's link is up.
    post: Mutex<Option<Post>>,
    mirror: OrgHandle,
    /// The version of the organization the copy holds (the host counts its changes).
    version: AtomicU64,
    /// Sessions' sandbox labels (read on every frame): the label last heard and when it was
    /// last asked for (asked again after a while, in the background).
    labels: Mutex<std::collections::HashMap<String, (std::time::Instant, Option<String>)>>,
    /// Runs whose tool approvals and relay drafts another front end is asked (`huddle run`,
    /// `huddle mcp`): by run id, its group and that front end, as the host said.
    asked_elsewhere: Mutex<std::collections::HashMap<String, (String, String)>>,
}

/// How long a session's sandbox label is shown before it is asked again.
const LABEL_KEPT: std::time::Duration = std::time::Duration::from_secs(5);

impl RemoteEdits {
    pub fn new(transport: Box<dyn EditTransport>, mirror: OrgHandle, version: u64) -> RemoteEdits {
        RemoteEdits {
            transport: Mutex::new(transport),
            post: Mutex::new(None),
            mirror,
            version: AtomicU64::new(version),
            labels: Mutex::new(std::collections::HashMap::new()),
            asked_elsewhere: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// The host said run `run_id` (of group `group_id`) asks `front`, not the TUIs: its
    /// approvals and drafts are not put to this TUI's user. Said before the event that asks
    /// is handed on, so the TUI knows it when the event comes.
    pub fn asked_elsewhere(&self, run_id: &str, group_id: &str, front: &str) {
        lock(&self.asked_elsewhere).insert(run_id.to_string(), (group_id.to_string(), front.to_string()));
    }

    /// The run ended: nothing of it is asked any more.
    pub fn run_ended(&self, run_id: &str) {
        lock(&self.asked_elsewhere).remove(run_id);
    }

    /// The front end a run's approvals and drafts are asked of, when it is not the TUIs.
    pub fn asker_of_run(&self, run_id: &str) -> Option<String> {
        lock(&self.asked_elsewhere)
            .get(run_id)
            .map(|(_, front)| front.clone())
    }

    /// The same for the run of a group (a relay's draft).
    pub fn asker_of_group(&self, group_id: &str) -> Option<String> {
        lock(&self.asked_elsewhere)
            .values()
            .find(|(group, _)| group == group_id)
            .map(|(_, front)| front.clone())
    }

    /// The front end reached a host again (the same after cutting it off, or a new one): its
    /// edits go out on `transport`, and the copy takes `org` whatever its version (a new host
    /// counts its changes from its start). The copy keeps its own UI state.
    pub fn reconnect(&self, transport: Box<dyn EditTransport>, org: Organization, version: u64) {
        *lock(&self.transport) = transport;
        self.version.store(0, Ordering::SeqCst);
        self.install(org, version);
        lock(&self.labels).clear();
        // The host's replay says again which runs ask elsewhere.
        lock(&self.asked_elsewhere).clear();
    }

    /// How edits that are not waited for go out from now on.
    pub fn set_post(&self, post: Post) {
        *lock(&self.post) = Some(post);
    }

    /// Sends `call` without waiting; false when there is no way to (the link is not up).
    fn post(&self, call: EditCall) -> bool {
        match lock(&self.post).as_ref() {
            Some(post) => {
                post(call);
                true
            }
            None => false,
        }
    }

    /// Takes the host's organization unless the copy holds a newer one already; true when it
    /// was taken. The copy keeps its own UI state (selection, folds).
    pub fn install(&self, org: Organization, version: u64) -> bool {
        if version < self.version.load(Ordering::SeqCst) {
            return false;
        }
        self.version.store(version, Ordering::SeqCst);
        self.mirror.update(|o| {
            let ui = std::mem::take(&mut o.ui);
            *o = org;
            o.ui = ui;
        });
        true
    }

    /// What the front end shows, in its copy only (the host is told when the front end goes:
    /// [`RemoteEdits::keep_ui`]).
    pub(super) fn select(&self, group_id: Option<&str>, session_id: Option<&str>) {
        self.mirror.update(|o| {
            o.ui.selected_group = group_id.map(str::to_string);
            o.ui.selected_session = session_id.map(str::to_string);
        });
    }

    /// Folds a group in the copy at once; the host keeps it for the next start (not waited for).
    pub(super) fn set_folded(&self, group_id: &str, folded: bool) {
        self.mirror.update(|o| {
            o.ui.collapsed_groups.retain(|g| g != group_id);
            if folded {
                o.ui.collapsed_groups.push(group_id.to_string());
            }
        });
        self.post(EditCall::SetFolded {
            group_id: group_id.to_string(),
            folded,
        });
    }

    /// Tells the host what this front end shows, for the next start (not waited for).
    pub(super) fn keep_ui(&self) {
        let (group_id, session_id) = self
            .mirror
            .read(|o| (o.ui.selected_group.clone(), o.ui.selected_session.clone()));
        self.post(EditCall::Select { group_id, session_id });
    }

    /// A session's sandbox label as last heard (never waited for: asked of the host in the
    /// background when not heard for a while; `None` until the answer comes).
    pub(super) fn sandbox_label(&self, session_id: &str) -> Option<String> {
        let label = {
            let mut labels = lock(&self.labels);
            match labels.get(session_id) {
                Some((at, label)) if at.elapsed() < LABEL_KEPT => return label.clone(),
                known => {
                    let label = known.and_then(|(_, label)| label.clone());
                    labels.insert(session_id.to_string(), (std::time::Instant::now(), label.clone()));
                    label
                }
            }
        };
        self.post(EditCall::SandboxLabel {
            session_id: session_id.to_string(),
        });
        label
    }

    /// The host's answer to a sandbox label asked by [`RemoteEdits::sandbox_label`].
    pub fn take_label(&self, session_id: &str, answer: serde_json::Value) {
        let label: Option<String> = serde_json::from_value(answer).unwrap_or(None);
        let mut labels = lock(&self.labels);
        let at = labels
            .get(session_id)
            .map_or_else(std::time::Instant::now, |(at, _)| *at);
        labels.insert(session_id.to_string(), (at, label));
    }

    pub(super) fn call<T: Remoted>(&self, call: EditCall) -> T {
        let answered = {
            let mut transport = lock(&self.transport);
            transport.call(call)
        };
        match answered {
            Ok((result, org)) => {
                if let Some((org, version)) = org {
                    self.install(org, version);
                }
                serde_json::from_value(result).unwrap_or_else(|e| {
                    T::unreachable(format!("the huddle host answered an edit unreadably: {e}"))
                })
            }
            Err(why) => T::unreachable(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::config::Config;

    /// A host that counts what it is asked and answers every edit with the organization.
    struct Counting {
        calls: Arc<AtomicUsize>,
    }

    impl EditTransport for Counting {
        fn call(&mut self, _: EditCall) -> Result<(serde_json::Value, Option<(Organization, u64)>), String> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Ok((serde_json::Value::Null, None))
        }
    }

    type Posted = Arc<Mutex<Vec<EditCall>>>;

    fn front() -> (Edits, Arc<RemoteEdits>, Arc<AtomicUsize>, Posted) {
        let calls = Arc::new(AtomicUsize::new(0));
        let mirror = OrgHandle::in_memory(Organization::default());
        let remote = Arc::new(RemoteEdits::new(
            Box::new(Counting {
                calls: Arc::clone(&calls),
            }),
            mirror.clone(),
            1,
        ));
        let posted = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&posted);
        remote.set_post(Box::new(move |call| lock(&sink).push(call)));
        let edits = Edits::remote(
            mirror,
            Config::default(),
            std::env::temp_dir(),
            Arc::clone(&remote),
        );
        (edits, remote, calls, posted)
    }

    #[test]
    fn moving_the_selection_and_folding_never_wait_for_the_host() {
        let (edits, remote, calls, posted) = front();
        edits.select(Some("g1"), Some("s1"));
        edits.select(Some("g2"), None);
        edits.set_folded("g1", true);
        assert_eq!(calls.load(Ordering::SeqCst), 0, "no round trip to the host");
        edits.view().read(|o| {
            assert_eq!(o.ui.selected_group.as_deref(), Some("g2"));
            assert_eq!(o.ui.collapsed_groups, vec!["g1".to_string()]);
        });
        // The fold goes out without waiting; the selection only when the front end goes.
        assert!(matches!(
            lock(&posted).as_slice(),
            [EditCall::SetFolded { folded: true, .. }]
        ));
        edits.keep_ui();
        assert!(matches!(
            lock(&posted).last(),
            Some(EditCall::Select { group_id: Some(g), session_id: None }) if g == "g2"
        ));
        // The host's next organization does not take this front end's selection away.
        let mut theirs = Organization::default();
        theirs.ui.selected_group = Some("elsewhere".into());
        assert!(remote.install(theirs, 2));
        edits
            .view()
            .read(|o| assert_eq!(o.ui.selected_group.as_deref(), Some("g2")));
    }

    #[test]
    fn the_sandbox_label_is_asked_in_the_background_and_read_from_what_came() {
        let (edits, remote, calls, posted) = front();
        assert_eq!(edits.sandbox_label("s1"), None, "nothing heard yet");
        assert_eq!(edits.sandbox_label("s1"), None);
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "rendering never waits for the host"
        );
        assert_eq!(lock(&posted).len(), 1, "asked once, not every frame");
        remote.take_label("s1", serde_json::json!("sandbox: bwrap"));
        assert_eq!(edits.sandbox_label("s1").as_deref(), Some("sandbox: bwrap"));
        assert_eq!(lock(&posted).len(), 1);
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }
}
