//! The application layer: every change a person makes to the organization (create, rename,
//! delete, model, mode, max iterations, system prompt, evaluator, what the UI remembers) goes
//! through here, from the TUI and from `huddle run` alike. Each edit validates its input and
//! refuses what would cut a running run off; the organization is saved in the background.
//! Deleting files (transcripts, run files) is a separate, blocking step: [`Edits::remove_files`].

use std::path::PathBuf;

use crate::config::Config;
use crate::engine::Engine;
use crate::model::limits::parse_max_iterations;
use crate::model::{
    GroupId, GroupKind, KeptEvaluator, Memory, Mode, Organization, Preset, Role, Session, SessionId,
    Worktree, WorktreeStrategy, reconcile,
};
use crate::naming::member_session_name;
use crate::presets::create_team_group;
use crate::store::{OrgHandle, OrgView, RunFiles, Transcripts};
use crate::worktrees::{self, Removed, WorktreeError};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, thiserror::Error)]
pub enum EditError {
    #[error("no such group (it was deleted)")]
    NoSuchGroup,
    #[error("no such session (it was deleted)")]
    NoSuchSession,
    #[error("{0}")]
    Invalid(String),
    #[error("a group named `{0}` exists already")]
    GroupNameTaken(String),
    #[error("a session named `{0}` exists already")]
    SessionNameTaken(String),
    #[error("{what} is running: stop it first (the stop key), then {action}")]
    Busy { what: String, action: String },
    #[error("{0}")]
    Model(String),
    /// A git worktree operation failed or was refused (the text says why and what to do).
    #[error("{0}")]
    Worktree(String),
    /// The host did not answer the edit (in time, or readably): it may still be made.
    #[error("{0}")]
    Unanswered(String),
}

impl From<WorktreeError> for EditError {
    fn from(e: WorktreeError) -> Self {
        EditError::Worktree(e.to_string())
    }
}

/// Files that belonged to deleted sessions and groups, to remove with [`Edits::remove_files`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Removal {
    pub sessions: Vec<SessionId>,
    /// A deleted group whose run files go too.
    pub group: Option<GroupId>,
    /// Worktrees no remaining session works in. Clean ones are removed with their branches;
    /// what happens to those holding work is `worktrees_with_work`.
    pub worktrees: Vec<Worktree>,
    /// What to do with worktrees holding uncommitted changes or unmerged commits: kept unless
    /// the user chose to remove them (ask with [`Edits::worktrees_at_risk`] first).
    pub worktrees_with_work: WorktreeChoice,
}

/// The user's choice for worktrees that hold work when their sessions are deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WorktreeChoice {
    /// Leave them (folder and branch) where they are; they are reported as not recorded at the
    /// next start, until removed.
    #[default]
    Keep,
    /// Remove them too, throwing their work away.
    Remove,
}

/// A worktree that holds work (or could not be checked, which counts the same), with the
/// sessions that work in it: what to ask about before deleting them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtRisk {
    pub worktree: Worktree,
    pub sessions: Vec<String>,
    /// `2 uncommitted changes and 1 unmerged commit`, or why it could not be checked.
    pub why: String,
}

/// What [`Edits::remove_files`] did with the removal's worktrees.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemovalReport {
    pub removed: Vec<Removed>,
    /// Kept because they hold work (and the choice was to keep them), with what they hold.
    pub kept: Vec<(Worktree, String)>,
    /// Could not be removed, with why (nothing was lost: they are still there).
    pub failed: Vec<(Worktree, String)>,
    /// The huddle host did not answer (why): what it removed is not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unanswered: Option<String>,
}

/// A group's evaluator after [`Edits::toggle_evaluator`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EvaluatorSwitch {
    /// A new evaluator session: its name and model.
    Added {
        session_id: SessionId,
        name: String,
        model: String,
    },
    /// The evaluator was removed; its transcript goes with it.
    Removed(Removal),
}

/// Tool servers (config.yaml `mcp_servers:` names) given to sessions and taken from them; a
/// server named in neither list stays as each session has it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolChange {
    pub on: Vec<String>,
    pub off: Vec<String>,
}

impl ToolChange {
    /// `tools` with `on` added (after those it has, in the order given) and `off` removed.
    fn apply(&self, tools: &mut Vec<String>) {
        tools.retain(|t| !self.off.contains(t));
        for name in &self.on {
            if !tools.contains(name) {
                tools.push(name.clone());
            }
        }
    }
}

/// The application layer's handle. Cheap to clone.
#[derive(Clone)]
pub struct Edits {
    org: OrgHandle,
    /// Asked before an edit that would cut a run off; `None` where nothing runs (tools, tests).
    engine: Option<Engine>,
    config: Config,
    /// The repository the front end was opened in: new sessions work there.
    repo: PathBuf,
    transcripts: Option<Transcripts>,
    runs: Option<RunFiles>,
    /// The data dir's `worktrees/` folder; without it no worktree is made or removed.
    worktrees_root: Option<PathBuf>,
    /// A front end of the host: every edit is the host's, `org` a copy of its organization.
    remote: Option<std::sync::Arc<super::remote::RemoteEdits>>,
}

/// True when `name` can name a session: not empty, no `/` (it is part of model slugs and paths
/// in messages).
fn valid_session_name(name: &str) -> Result<(), EditError> {
    if name.trim().is_empty() || name.contains('/') {
        return Err(EditError::Invalid("a session needs a name without `/`".into()));
    }
    Ok(())
}

impl Edits {
    pub fn new(
        org: OrgHandle,
        engine: Engine,
        config: Config,
        repo: PathBuf,
        transcripts: Transcripts,
        runs: RunFiles,
    ) -> Edits {
        Edits {
            org,
            engine: Some(engine),
            config,
            repo,
            transcripts: Some(transcripts),
            runs: Some(runs),
            worktrees_root: None,
            remote: None,
        }
    }

    /// Edits of an organization no engine runs (tests, tools): nothing is ever busy and no
    /// files are removed.
    pub fn detached(org: OrgHandle, config: Config, repo: PathBuf) -> Edits {
        Edits {
            org,
            engine: None,
            config,
            repo,
            transcripts: None,
            runs: None,
            worktrees_root: None,
            remote: None,
        }
    }

    /// Edits made by the host (a front end's): `org` is the front end's copy of the host's
    /// organization, which `remote` keeps current.
    pub fn remote(
        org: OrgHandle,
        config: Config,
        repo: PathBuf,
        remote: std::sync::Arc<super::remote::RemoteEdits>,
    ) -> Edits {
        Edits {
            remote: Some(remote),
            ..Edits::detached(org, config, repo)
        }
    }

    /// True for a front end of the host (its edits are the host's).
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// The front end (`huddle mcp (pid N)`...) the approvals of run `run_id` are asked of
    /// when it is not the TUIs; `None` for the TUIs' runs (and without a host).
    pub fn asked_elsewhere(&self, run_id: &str) -> Option<String> {
        self.remote.as_ref()?.asker_of_run(run_id)
    }

    /// The same for the run of group `group_id` (a relay's drafts).
    pub fn group_asked_elsewhere(&self, group_id: &str) -> Option<String> {
        self.remote.as_ref()?.asker_of_group(group_id)
    }

    /// Where team worktrees live (`Paths::worktrees_dir`): needed to make or remove any.
    pub fn with_worktrees_root(mut self, root: PathBuf) -> Edits {
        self.worktrees_root = Some(root);
        self
    }

    /// The same organization and engine as a front end elsewhere sees them: new sessions in
    /// its `repo`, models checked against its `config` (a host keeps one per front end).
    pub fn for_front(&self, config: Config, repo: PathBuf) -> Edits {
        Edits {
            config,
            repo,
            ..self.clone()
        }
    }

    /// The repository new sessions work in.
    pub fn repo(&self) -> &std::path::Path {
        &self.repo
    }

    fn worktrees_root(&self) -> Result<&std::path::Path, EditError> {
        self.worktrees_root
            .as_deref()
            .ok_or_else(|| EditError::Worktree("no worktrees folder is configured for this workspace".into()))
    }

    /// The sandbox of a session's processes, for its header (see `Engine::sandbox_label`);
    /// `None` without an engine or for a session that starts no process.
    pub fn sandbox_label(&self, session_id: &str) -> Option<String> {
        if let Some(remote) = &self.remote {
            return remote.sandbox_label(session_id);
        }
        self.engine.as_ref()?.sandbox_label(session_id)
    }

    /// The organization, read-only.
    pub fn view(&self) -> OrgView {
        self.org.view()
    }

    fn group_busy(&self, group_id: &str) -> bool {
        self.engine.as_ref().is_some_and(|e| e.group_busy(group_id))
    }

    fn session_busy(&self, session_id: &str) -> bool {
        self.engine.as_ref().is_some_and(|e| e.session_busy(session_id))
    }

    /// A plain session in `group_id`, working in the group's repo (or the front end's).
    pub fn create_session(&self, group_id: &str, name: &str) -> Result<SessionId, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::CreateSession {
                group_id: group_id.to_string(),
                name: name.to_string(),
            });
        }
        let name = name.trim();
        valid_session_name(name)?;
        let model = self.config.default_model();
        let repo = self.repo.clone();
        self.org.update(|o| {
            if o.session_by_name(name).is_some() {
                return Err(EditError::SessionNameTaken(name.to_string()));
            }
            let group = o.group(group_id).ok_or(EditError::NoSuchGroup)?;
            let mut s = Session::new(name, group_id, model);
            s.repo = group.repo.clone().or(Some(repo));
            s.team = group.is_team();
            s.role = Role::Worker;
            s.order = o.next_session_order(group_id);
            let id = s.id.clone();
            o.sessions.push(s);
            // The new session shows in its group.
            o.ui.collapsed_groups.retain(|g| g != group_id);
            Ok(id)
        })
    }

    /// A new member of a team: `<team-slug>-<name>` (unless `name` has the prefix already),
    /// a worker on `model` with `system_prompt` (blank: none). A run in progress is not
    /// changed (it read its team when it started); the next run includes the member.
    pub fn add_member(
        &self,
        group_id: &str,
        name: &str,
        model: &str,
        system_prompt: &str,
    ) -> Result<SessionId, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::AddMember {
                group_id: group_id.to_string(),
                name: name.to_string(),
                model: model.to_string(),
                system_prompt: system_prompt.to_string(),
            });
        }
        let name = name.trim();
        valid_session_name(name)?;
        let model = model.trim();
        self.config
            .resolve(model)
            .map_err(|e| EditError::Invalid(format!("model: {e}")))?;
        let repo = self.repo.clone();
        self.org.update(|o| {
            let group = o.group(group_id).ok_or(EditError::NoSuchGroup)?;
            if !group.is_team() {
                return Err(EditError::Invalid(
                    "members are added to a team; use the new-session key for a plain session".into(),
                ));
            }
            let slug = crate::naming::team_slug(&group.name);
            let full = if crate::naming::strip_team_prefix(name, &slug) != name {
                name.to_string()
            } else {
                crate::naming::member_session_name(&slug, name)
            };
            if o.session_by_name(&full).is_some() {
                return Err(EditError::SessionNameTaken(full));
            }
            let mut s = Session::new(&full, group_id, model);
            s.repo = group.repo.clone().or(Some(repo));
            s.team = true;
            s.role = Role::Worker;
            s.system_prompt = Some(system_prompt.to_string()).filter(|t| !t.trim().is_empty());
            s.order = o.next_session_order(group_id);
            let id = s.id.clone();
            o.sessions.push(s);
            o.ui.collapsed_groups.retain(|g| g != group_id);
            Ok(id)
        })
    }

    /// A session for one headless question, in the default group, named after the time.
    pub fn create_run_session(&self, model: &str) -> SessionId {
        let repo = self.repo.clone();
        self.org.update(|o| {
            let group = o.default_group().map(|g| g.id.clone()).unwrap_or_default();
            let name =
                o.unique_session_name(&format!("run-{}", chrono::Local::now().format("%Y%m%d-%H%M%S")));
            let mut session = Session::new(name, &group, model);
            session.repo = Some(repo);
            session.headless_at = Some(chrono::Utc::now());
            session.order = o.next_session_order(&group);
            let id = session.id.clone();
            o.sessions.push(session);
            id
        })
    }

    /// A team group from a preset, with its orchestrator, workers and evaluator, all working
    /// in the repository (`shared`) whatever the preset's `worktrees:` says: this makes no
    /// worktree and runs no git. For a strategy, use [`Edits::create_team_with`].
    pub fn create_team(&self, preset: &Preset) -> GroupId {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::CreateTeam {
                preset: Box::new(preset.clone()),
            });
        }
        let (config, repo) = (&self.config, &self.repo);
        self.org
            .update(|o| create_team_group(o, preset, config, Some(repo)))
    }

    /// A team `huddle run` made from `preset` (with [`Edits::create_team_with`]), named so it is
    /// recognisable in the sidebar (`<preset> · run <month day hh:mm>`) and stamped as a
    /// headless leftover. Its members keep the names the preset gives them (`<team>-<role>`),
    /// which scripts use (`huddle worktrees diff --session`).
    pub fn create_headless_team(
        &self,
        preset: &Preset,
        strategy: WorktreeStrategy,
    ) -> Result<GroupId, EditError> {
        let id = self.create_team_with(preset, strategy)?;
        let now = chrono::Local::now();
        self.org.update(|o| {
            let name = o.unique_group_name(&headless_team_name(&preset.name, &now));
            if let Some(g) = o.group_mut(&id) {
                g.name = name;
                g.headless_at = Some(now.with_timezone(&chrono::Utc));
            }
        });
        Ok(id)
    }

    /// Records that a headless run used the group now, when `huddle run` made it: `huddle runs
    /// prune` counts a leftover's age from its last use.
    pub fn touch_headless(&self, group_id: &str) {
        self.org.update(|o| {
            if let Some(g) = o.group_mut(group_id)
                && g.headless_at.is_some()
            {
                g.headless_at = Some(chrono::Utc::now());
            }
        });
    }

    /// A team group from a preset whose members work in git worktrees per `strategy` (the
    /// new-team dialog offers `preset.worktrees` first). Every worktree is made (`git worktree
    /// add` on a new `huddle/…` branch from the repository's HEAD; a detached HEAD is fine) before
    /// the team is recorded, and the organization is then saved at once; a failure makes
    /// nothing (worktrees already made are removed again). `shared` is [`Edits::create_team`].
    /// Blocking (git): call it off the UI thread.
    pub fn create_team_with(
        &self,
        preset: &Preset,
        strategy: WorktreeStrategy,
    ) -> Result<GroupId, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::CreateTeamWith {
                preset: Box::new(preset.clone()),
                strategy,
            });
        }
        if strategy.is_shared() {
            return Ok(self.create_team(preset));
        }
        let root = std::path::absolute(self.worktrees_root()?)
            .map_err(|e| EditError::Worktree(format!("cannot resolve the worktrees folder: {e}")))?;
        let head = worktrees::repo_head(&self.repo)?;
        let (config, repo) = (&self.config, &self.repo);
        // The team as it will be, to name its worktrees; recorded only once they exist.
        let mut scratch = self.org.snapshot();
        let draft = create_team_group(&mut scratch, preset, config, Some(repo));
        let plan = worktrees::plan_team(
            &scratch,
            &draft,
            strategy,
            &worktrees::repo_dir(&root, &head.toplevel),
            worktrees::random_suffix,
        );
        let members: Vec<SessionId> = scratch.sessions_in(&draft).iter().map(|s| s.id.clone()).collect();
        let made = worktrees::create_worktrees(&head, &plan)?;
        // Members by their place in the team (the real team is made again below).
        let places: Vec<(usize, Worktree)> = plan
            .iter()
            .zip(&made)
            .flat_map(|(p, w)| {
                p.sessions
                    .iter()
                    .filter_map(|id| members.iter().position(|m| m == id))
                    .map(move |i| (i, w.clone()))
            })
            .collect();
        let group_id = self.org.update(|o| {
            let id = create_team_group(o, preset, config, Some(repo));
            let ids: Vec<SessionId> = o.sessions_in(&id).iter().map(|s| s.id.clone()).collect();
            for (i, w) in places {
                if let Some(s) = ids.get(i).and_then(|sid| o.session_mut(sid)) {
                    s.worktree = Some(w);
                }
            }
            if let Some(g) = o.group_mut(&id) {
                g.worktrees = strategy;
            }
            id
        });
        // A crash from here on leaves a recorded team, not orphaned worktrees.
        if let Err(e) = self.org.flush() {
            tracing::warn!(error = %e, "cannot save the organization after making worktrees");
        }
        Ok(group_id)
    }

    /// Worktrees that would lose work if removed (uncommitted changes, unmerged commits, or
    /// they could not be checked), among those deleting the group would remove: ask the user
    /// to keep or remove them when this is not empty. Blocking (git).
    pub fn worktrees_at_risk(&self, group_id: &str) -> Vec<AtRisk> {
        let org = self.org.snapshot();
        let ids: Vec<SessionId> = org.sessions_in(group_id).iter().map(|s| s.id.clone()).collect();
        at_risk(&org, &orphaned_by(&org, &ids))
    }

    /// Removes the session's worktree (and its branch) and forgets it on every session that
    /// worked there (they then work in the repository). Refused while any of them is busy, and,
    /// without `force`, when the worktree holds uncommitted changes or unmerged commits. A
    /// worktree whose folder is gone is forgotten (its branch deleted when nothing is unmerged).
    /// Blocking (git).
    pub fn remove_worktree(&self, session_id: &str, force: bool) -> Result<Removed, EditError> {
        let worktree = self
            .org
            .read(|o| o.session(session_id).map(|s| s.worktree.clone()))
            .ok_or(EditError::NoSuchSession)?
            .ok_or_else(|| EditError::Invalid("this session has no worktree".into()))?;
        let mut removed = self.remove_worktrees(std::slice::from_ref(&worktree), force)?;
        Ok(removed.remove(0))
    }

    /// Removes every worktree of the group's sessions, as [`Edits::remove_worktree`] does;
    /// without `force`, nothing is removed when any of them holds work. The team then works in
    /// the repository (`shared`). Blocking (git).
    pub fn remove_group_worktrees(&self, group_id: &str, force: bool) -> Result<Vec<Removed>, EditError> {
        let records = self.org.read(|o| {
            o.group(group_id).map(|_| {
                worktrees::distinct(o.sessions_in(group_id).iter().filter_map(|s| s.worktree.as_ref()))
            })
        });
        let records = records.ok_or(EditError::NoSuchGroup)?;
        let removed = self.remove_worktrees(&records, force)?;
        self.org.update(|o| {
            if let Some(g) = o.group_mut(group_id) {
                g.worktrees = WorktreeStrategy::Shared;
            }
        });
        Ok(removed)
    }

    fn remove_worktrees(&self, records: &[Worktree], force: bool) -> Result<Vec<Removed>, EditError> {
        let root = self.worktrees_root()?.to_path_buf();
        let users = |o: &Organization, w: &Worktree| -> Vec<(SessionId, GroupId)> {
            o.sessions
                .iter()
                .filter(|s| s.worktree.as_ref().is_some_and(|x| x.path == w.path))
                .map(|s| (s.id.clone(), s.group_id.clone()))
                .collect()
        };
        for w in records {
            let busy = self.org.read(|o| users(o, w));
            if busy
                .iter()
                .any(|(s, g)| self.session_busy(s) || self.group_busy(g))
            {
                return Err(EditError::Busy {
                    what: format!("a session working in {}", w.path.display()),
                    action: "remove its worktree".into(),
                });
            }
        }
        if !force {
            let org = self.org.snapshot();
            let risky = at_risk(&org, records);
            if !risky.is_empty() {
                let list: Vec<String> = risky
                    .iter()
                    .map(|r| {
                        format!(
                            "{} ({}): {}",
                            r.worktree.path.display(),
                            r.sessions.join(", "),
                            r.why
                        )
                    })
                    .collect();
                return Err(EditError::Worktree(format!(
                    "nothing was removed: {}; force the removal to throw this work away",
                    list.join("; ")
                )));
            }
        }
        let mut removed = Vec::new();
        for w in records {
            let done = worktrees::remove(&root, w, force)?;
            self.org.update(|o| {
                for s in o.sessions.iter_mut() {
                    if s.worktree.as_ref().is_some_and(|x| x.path == w.path) {
                        s.worktree = None;
                    }
                }
            });
            removed.push(done);
        }
        if let Err(e) = self.org.flush() {
            tracing::warn!(error = %e, "cannot save the organization after removing worktrees");
        }
        Ok(removed)
    }

    /// Removes a worktree no session records (an orphan that reconciling reported), given by
    /// its folder inside the worktrees folder; without `force` only when it holds no work.
    /// Blocking (git).
    pub fn remove_orphan_worktree(&self, path: &std::path::Path, force: bool) -> Result<Removed, EditError> {
        let root = self.worktrees_root()?;
        let path =
            std::path::absolute(path).map_err(|e| EditError::Invalid(format!("{}: {e}", path.display())))?;
        if let Some(name) = self.org.read(|o| {
            o.sessions
                .iter()
                .find(|s| s.worktree.as_ref().is_some_and(|w| w.path == path))
                .map(|s| s.name.clone())
        }) {
            return Err(EditError::Invalid(format!(
                "{} is the worktree of session `{name}`: remove it with --session",
                path.display()
            )));
        }
        let worktree = worktrees::orphan(root, &path)?;
        Ok(worktrees::remove(root, &worktree, force)?)
    }

    /// Renames a group (also while it runs: runs and events know it by id).
    pub fn rename_group(&self, group_id: &str, name: &str) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::RenameGroup {
                group_id: group_id.to_string(),
                name: name.to_string(),
            });
        }
        let name = name.trim();
        if name.is_empty() {
            return Err(EditError::Invalid("a group needs a name".into()));
        }
        self.org.update(|o| {
            if o.groups
                .iter()
                .any(|g| g.id != group_id && g.name.eq_ignore_ascii_case(name))
            {
                return Err(EditError::GroupNameTaken(name.to_string()));
            }
            let g = o.group_mut(group_id).ok_or(EditError::NoSuchGroup)?;
            g.name = name.to_string();
            Ok(())
        })
    }

    /// Renames a session (also while it is busy; an evaluator stays the evaluator).
    pub fn rename_session(&self, session_id: &str, name: &str) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::RenameSession {
                session_id: session_id.to_string(),
                name: name.to_string(),
            });
        }
        let name = name.trim();
        valid_session_name(name)?;
        self.org.update(|o| {
            if o.sessions.iter().any(|s| s.id != session_id && s.name == name) {
                return Err(EditError::SessionNameTaken(name.to_string()));
            }
            let s = o.session_mut(session_id).ok_or(EditError::NoSuchSession)?;
            s.name = name.to_string();
            Ok(())
        })
    }

    /// What deleting the group would do, for a confirmation (no git: whether its worktrees hold
    /// work is [`Edits::worktrees_at_risk`]).
    pub fn describe_delete_group(&self, group_id: &str) -> Result<String, EditError> {
        self.org
            .read(|o| {
                let text = reconcile::describe_delete(o, group_id)?;
                let ids: Vec<SessionId> = o.sessions_in(group_id).iter().map(|s| s.id.clone()).collect();
                let n = orphaned_by(o, &ids).len();
                Ok(if n == 0 || !o.group(group_id).is_some_and(|g| g.is_team()) {
                    text
                } else {
                    format!(
                        "{text}; and its {n} git worktree(s) with their branches (any holding uncommitted changes or unmerged commits are kept unless you choose to remove them)"
                    )
                })
            })
            .map_err(|e: reconcile::DeleteError| EditError::Invalid(e.to_string()))
    }

    /// Every session with a worktree (of `group_id`, or all) with its branch, uncommitted
    /// changes and commits ahead: what the sidebar shows. Blocking (git): call it off the UI
    /// thread (`spawn_blocking`).
    pub fn worktree_statuses(&self, group_id: Option<&str>) -> Vec<worktrees::SessionWorktree> {
        worktrees::session_statuses(&self.org.snapshot(), group_id)
    }

    /// Deletes a group: a team with its sessions, any other group's sessions move to the
    /// default group. Refused while anything of the group runs.
    pub fn delete_group(&self, group_id: &str) -> Result<Removal, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::DeleteGroup {
                group_id: group_id.to_string(),
            });
        }
        if self.group_busy(group_id) {
            return Err(EditError::Busy {
                what: "this group (or one of its sessions)".into(),
                action: "delete it".into(),
            });
        }
        let (deleted, worktrees) = self
            .org
            .update(|o| {
                let theirs =
                    worktrees::distinct(o.sessions_in(group_id).iter().filter_map(|s| s.worktree.as_ref()));
                let deleted = reconcile::delete_group(o, group_id)?;
                Ok((deleted, unused(o, theirs)))
            })
            .map_err(|e: reconcile::DeleteError| EditError::Invalid(e.to_string()))?;
        Ok(Removal {
            sessions: deleted.removed_sessions,
            group: Some(group_id.to_string()),
            worktrees,
            worktrees_with_work: WorktreeChoice::Keep,
        })
    }

    /// Deletes a session and (with [`Edits::remove_files`]) its transcript. Refused while it or
    /// its team runs.
    pub fn delete_session(&self, session_id: &str) -> Result<Removal, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::DeleteSession {
                session_id: session_id.to_string(),
            });
        }
        let group_id = self
            .org
            .read(|o| o.session(session_id).map(|s| s.group_id.clone()))
            .ok_or(EditError::NoSuchSession)?;
        if self.session_busy(session_id) || self.group_busy(&group_id) {
            return Err(EditError::Busy {
                what: "this session (or its team)".into(),
                action: "delete it".into(),
            });
        }
        let worktrees = self.org.update(|o| {
            let gone = orphaned_by(o, &[session_id.to_string()]);
            o.sessions.retain(|s| s.id != session_id);
            if let Some(g) = o.group_mut(&group_id)
                && g.evaluator_id.as_deref() == Some(session_id)
            {
                g.evaluator_id = None;
            }
            gone
        });
        Ok(Removal {
            sessions: vec![session_id.to_string()],
            group: None,
            worktrees,
            worktrees_with_work: WorktreeChoice::Keep,
        })
    }

    /// Deletes the files of what was removed (blocking: call it off the UI thread): the
    /// transcripts, the run files, and the removal's worktrees: clean ones with their branches,
    /// those holding work only when `worktrees_with_work` is [`WorktreeChoice::Remove`] (each
    /// is checked again here, so work done since the question is never lost by default).
    /// Failures are logged and reported; the organization no longer refers to the files.
    pub fn remove_files(&self, removal: &Removal) -> RemovalReport {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::RemoveFiles {
                removal: removal.clone(),
            });
        }
        let mut report = RemovalReport::default();
        if !removal.worktrees.is_empty() {
            match self.worktrees_root() {
                Ok(root) => {
                    let force = removal.worktrees_with_work == WorktreeChoice::Remove;
                    for w in &removal.worktrees {
                        match worktrees::remove(root, w, force) {
                            Ok(done) => report.removed.push(done),
                            Err(WorktreeError::HasWork { what, .. }) => report.kept.push((w.clone(), what)),
                            Err(e) => {
                                tracing::warn!(path = %w.path.display(), error = %e, "cannot remove a worktree");
                                report.failed.push((w.clone(), e.to_string()));
                            }
                        }
                    }
                }
                Err(e) => {
                    for w in &removal.worktrees {
                        report.failed.push((w.clone(), e.to_string()));
                    }
                }
            }
        }
        if let Some(t) = &self.transcripts {
            for id in &removal.sessions {
                if let Err(e) = t.remove(id) {
                    tracing::warn!(session = %id, error = %e, "cannot delete a transcript");
                }
            }
        }
        if let Some(runs) = &self.runs {
            for id in &removal.sessions {
                if let Err(e) = runs.remove_session(id) {
                    tracing::warn!(session = %id, error = %e, "cannot delete a session's run files");
                }
            }
        }
        if let (Some(runs), Some(group)) = (&self.runs, &removal.group)
            && let Err(e) = runs.remove_group(group)
        {
            tracing::warn!(group = %group, error = %e, "cannot delete run files");
        }
        report
    }

    fn check_model(&self, slug: &str) -> Result<(), EditError> {
        self.config
            .resolve(slug)
            .map(|_| ())
            .map_err(|e| EditError::Model(e.to_string()))
    }

    pub fn set_session_model(&self, session_id: &str, slug: &str) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::SetSessionModel {
                session_id: session_id.to_string(),
                slug: slug.to_string(),
            });
        }
        self.check_model(slug)?;
        self.org.update(|o| {
            let s = o.session_mut(session_id).ok_or(EditError::NoSuchSession)?;
            s.model = slug.to_string();
            Ok(())
        })
    }

    /// Every session of the group gets the model.
    pub fn set_group_model(&self, group_id: &str, slug: &str) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::SetGroupModel {
                group_id: group_id.to_string(),
                slug: slug.to_string(),
            });
        }
        self.check_model(slug)?;
        self.org.update(|o| {
            o.group(group_id).ok_or(EditError::NoSuchGroup)?;
            for s in o.sessions.iter_mut().filter(|s| s.group_id == group_id) {
                s.model = slug.to_string();
            }
            Ok(())
        })
    }

    /// The team's mode for its next run (a run in progress keeps the mode it started with). Its
    /// `max_iterations`, when still the old mode's default, becomes the new mode's.
    pub fn set_mode(&self, group_id: &str, mode: Mode) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::SetMode {
                group_id: group_id.to_string(),
                mode,
            });
        }
        self.org.update(|o| {
            let g = o.group_mut(group_id).ok_or(EditError::NoSuchGroup)?;
            // A limit nobody chose (the mode it leaves's default) becomes the new mode's: a team
            // switched to dispatch gets dispatch's, not a reflect cycle's (review 28 item 13).
            if g.max_iterations == g.mode.spec().default_max_iterations {
                g.max_iterations = mode.spec().default_max_iterations;
            }
            g.mode = mode;
            Ok(())
        })
    }

    /// What the team's members remember between runs (applies from its next run).
    pub fn set_memory(&self, group_id: &str, memory: Memory) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::SetMemory {
                group_id: group_id.to_string(),
                memory,
            });
        }
        self.org.update(|o| {
            let g = o.group_mut(group_id).ok_or(EditError::NoSuchGroup)?;
            g.memory = memory;
            Ok(())
        })
    }

    /// Starts a new conversation for a session: its next turn is sent nothing from before
    /// (the transcript keeps everything, marked where the new one begins). Refused while busy.
    pub fn new_session_conversation(&self, session_id: &str) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::NewSessionConversation {
                session_id: session_id.to_string(),
            });
        }
        self.view()
            .read(|o| o.session(session_id).map(|_| ()))
            .ok_or(EditError::NoSuchSession)?;
        if self.session_busy(session_id) {
            return Err(self.busy_session(session_id, "start a new conversation"));
        }
        self.mark_new_conversation(&[session_id.to_string()])
    }

    /// Starts a new conversation for every member of a group. Refused while it is busy.
    pub fn new_group_conversation(&self, group_id: &str) -> Result<usize, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::NewGroupConversation {
                group_id: group_id.to_string(),
            });
        }
        let (name, members) = self
            .view()
            .read(|o| {
                let g = o.group(group_id)?;
                let members: Vec<SessionId> = o.sessions_in(group_id).iter().map(|s| s.id.clone()).collect();
                Some((g.name.clone(), members))
            })
            .ok_or(EditError::NoSuchGroup)?;
        if self.group_busy(group_id) {
            return Err(EditError::Busy {
                what: name,
                action: "start a new conversation".into(),
            });
        }
        self.mark_new_conversation(&members)?;
        Ok(members.len())
    }

    /// Takes back a session's last exchange (from its user message `from` on) so that it can
    /// be asked again (regenerate, or an edited prompt): the exchange stays in the transcript,
    /// superseded. Refused while the session is busy.
    pub fn supersede_last_exchange(&self, session_id: &str, from: &str, why: &str) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::SupersedeLastExchange {
                session_id: session_id.to_string(),
                from: from.to_string(),
                why: why.to_string(),
            });
        }
        self.view()
            .read(|o| o.session(session_id).map(|_| ()))
            .ok_or(EditError::NoSuchSession)?;
        if self.session_busy(session_id) {
            return Err(self.busy_session(session_id, "regenerate or resend"));
        }
        let engine = self
            .engine
            .as_ref()
            .ok_or_else(|| EditError::Invalid("no engine keeps these conversations".into()))?;
        engine.supersede(session_id, from, why).map_err(|e| match e {
            crate::engine::EngineError::AlreadyRunning(id) => self.busy_session(&id, "regenerate or resend"),
            crate::engine::EngineError::NoSuchSession(_) => EditError::NoSuchSession,
            other => EditError::Invalid(other.to_string()),
        })
    }

    /// A copy of a session under a new name (`<name>-fork`, made unique): its model, system
    /// prompt and tools, and its whole transcript, written atomically before the session is
    /// added (so a failure adds nothing). A plain session's fork joins its group; a team
    /// member's becomes a plain session in the default group. Refused while the session is
    /// busy. Blocking (it reads and writes the transcript): call it off the UI thread.
    pub fn fork_session(&self, session_id: &str) -> Result<SessionId, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::ForkSession {
                session_id: session_id.to_string(),
            });
        }
        let original = self
            .view()
            .read(|o| {
                let s = o.session(session_id)?;
                let group = o.group(&s.group_id)?;
                let target = if group.is_team() {
                    o.default_group()?.id.clone()
                } else {
                    group.id.clone()
                };
                Some((s.clone(), s.working_dir(Some(group)), target))
            })
            .ok_or(EditError::NoSuchSession)?;
        let (original, workdir, target) = original;
        if self.session_busy(session_id) {
            return Err(self.busy_session(session_id, "fork it"));
        }
        let (Some(engine), Some(transcripts)) = (&self.engine, &self.transcripts) else {
            return Err(EditError::Invalid("no engine keeps these conversations".into()));
        };
        let messages = engine
            .load_transcript(session_id)
            .map_err(|e| EditError::Invalid(format!("cannot read the transcript: {e}")))?
            .messages;
        let mut fork = Session::new(String::new(), &target, original.model.clone());
        fork.system_prompt = original.system_prompt.clone();
        fork.tools = original.tools.clone();
        fork.max_tool_rounds = original.max_tool_rounds;
        fork.repo = workdir.or_else(|| Some(self.repo.clone()));
        transcripts
            .create_with(&fork.id, &messages)
            .map_err(|e| EditError::Invalid(format!("cannot write the fork's transcript: {e}")))?;
        let base = format!("{}-fork", original.name);
        Ok(self.org.update(|o| {
            fork.name = o.unique_session_name(&base);
            fork.order = o.next_session_order(&target);
            let id = fork.id.clone();
            o.sessions.push(fork);
            o.ui.collapsed_groups.retain(|g| *g != target);
            id
        }))
    }

    fn busy_session(&self, session_id: &str, action: &'static str) -> EditError {
        let what = self
            .view()
            .read(|o| o.session(session_id).map(|s| s.name.clone()))
            .unwrap_or_default();
        EditError::Busy {
            what,
            action: action.to_string(),
        }
    }

    fn mark_new_conversation(&self, sessions: &[SessionId]) -> Result<(), EditError> {
        let engine = self
            .engine
            .as_ref()
            .ok_or_else(|| EditError::Invalid("no engine keeps these conversations".into()))?;
        engine.new_conversation(sessions).map_err(|e| match e {
            crate::engine::EngineError::AlreadyRunning(id) => {
                self.busy_session(&id, "start a new conversation")
            }
            crate::engine::EngineError::NoSuchSession(_) => EditError::NoSuchSession,
            other => EditError::Invalid(other.to_string()),
        })
    }

    /// The team's max iterations, from text a person typed.
    pub fn set_max_iterations(&self, group_id: &str, text: &str) -> Result<u32, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::SetMaxIterations {
                group_id: group_id.to_string(),
                text: text.to_string(),
            });
        }
        let n = parse_max_iterations(text).map_err(|e| EditError::Invalid(e.to_string()))?;
        self.org.update(|o| {
            let g = o.group_mut(group_id).ok_or(EditError::NoSuchGroup)?;
            g.max_iterations = n;
            Ok(n)
        })
    }

    /// Gives `session_id` the tool servers of `change.on` and takes those of `change.off`
    /// (its other servers stay). Only config.yaml's `mcp_servers:` can be named. Refused while
    /// the session is busy or its team runs (a turn keeps the tools it started with).
    pub fn set_tools(&self, session_id: &str, change: &ToolChange) -> Result<(), EditError> {
        self.check_tool_change(change)?;
        let (group_id, team) = self
            .org
            .read(|o| o.session(session_id).map(|s| (s.group_id.clone(), s.team)))
            .ok_or(EditError::NoSuchSession)?;
        if self.session_busy(session_id) || (team && self.group_busy(&group_id)) {
            return Err(self.busy_session(session_id, "change its tools"));
        }
        self.org.update(|o| {
            let s = o.session_mut(session_id).ok_or(EditError::NoSuchSession)?;
            change.apply(&mut s.tools);
            Ok(())
        })
    }

    /// [`Edits::set_tools`] for every session of the group (a team: every member). Refused
    /// while any of them is busy. Returns how many sessions the group has.
    pub fn set_group_tools(&self, group_id: &str, change: &ToolChange) -> Result<usize, EditError> {
        self.check_tool_change(change)?;
        let name = self
            .org
            .read(|o| o.group(group_id).map(|g| g.name.clone()))
            .ok_or(EditError::NoSuchGroup)?;
        if self.group_busy(group_id) {
            return Err(EditError::Busy {
                what: format!("group `{name}`"),
                action: "change its tools".into(),
            });
        }
        self.org.update(|o| {
            o.group(group_id).ok_or(EditError::NoSuchGroup)?;
            let mut n = 0;
            for s in o.sessions.iter_mut().filter(|s| s.group_id == group_id) {
                change.apply(&mut s.tools);
                n += 1;
            }
            Ok(n)
        })
    }

    /// Every server named must be one of config.yaml's `mcp_servers:`.
    fn check_tool_change(&self, change: &ToolChange) -> Result<(), EditError> {
        let configured = &self.config.mcp_servers;
        let Some(unknown) = change
            .on
            .iter()
            .chain(&change.off)
            .find(|n| !configured.contains_key(*n))
        else {
            return Ok(());
        };
        let known = if configured.is_empty() {
            "none is configured".to_string()
        } else {
            let names: Vec<&str> = configured.keys().map(String::as_str).collect();
            format!("configured: {}", names.join(", "))
        };
        Err(EditError::Invalid(format!(
            "`{unknown}` is not a tool server of config.yaml ({known}; add it under mcp_servers:)"
        )))
    }

    /// A session's system prompt; blank text removes it.
    pub fn set_system_prompt(&self, session_id: &str, text: &str) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::SetSystemPrompt {
                session_id: session_id.to_string(),
                text: text.to_string(),
            });
        }
        self.org.update(|o| {
            let s = o.session_mut(session_id).ok_or(EditError::NoSuchSession)?;
            s.system_prompt = Some(text.to_string()).filter(|t| !t.trim().is_empty());
            Ok(())
        })
    }

    /// The team's evaluator, if it has one: (session id, name).
    pub fn evaluator(&self, group_id: &str) -> Option<(SessionId, String)> {
        self.org
            .read(|o| o.evaluator_of(group_id).map(|s| (s.id.clone(), s.name.clone())))
    }

    /// Adds an evaluator session (default model) to a reflect team without one. Refused while
    /// the team runs.
    pub fn add_evaluator(&self, group_id: &str) -> Result<EvaluatorSwitch, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::AddEvaluator {
                group_id: group_id.to_string(),
            });
        }
        self.check_evaluator_switch(group_id)?;
        let model = self.config.default_model();
        let repo = self.repo.clone();
        self.org.update(|o| {
            if o.evaluator_of(group_id).is_some() {
                return Err(EditError::Invalid("this team has an evaluator already".into()));
            }
            let g = o.group(group_id).ok_or(EditError::NoSuchGroup)?;
            let name = o.unique_session_name(&member_session_name(&g.members_slug(), "evaluator"));
            // Back as it was when switched off (its model only while its provider is configured).
            let kept = g.evaluator_kept.clone();
            let model = kept
                .as_ref()
                .map(|k| k.model.clone())
                .filter(|m| self.config.resolve(m).is_ok())
                .unwrap_or(model);
            let mut s = Session::new(name.clone(), group_id, model.clone());
            if let Some(k) = kept {
                s.system_prompt = k.system_prompt;
                s.tools = k.tools;
            }
            s.role = Role::Evaluator;
            s.team = true;
            s.order = o.next_session_order(group_id);
            s.repo = g.repo.clone().or(Some(repo));
            let session_id = s.id.clone();
            o.sessions.push(s);
            if let Some(g) = o.group_mut(group_id) {
                g.evaluator_id = Some(session_id.clone());
                g.evaluator_kept = None;
            }
            Ok(EvaluatorSwitch::Added {
                session_id,
                name,
                model,
            })
        })
    }

    /// Removes the team's evaluator session (its transcript with [`Edits::remove_files`]); the
    /// orchestrator then judges its own work.
    pub fn remove_evaluator(&self, group_id: &str) -> Result<EvaluatorSwitch, EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::RemoveEvaluator {
                group_id: group_id.to_string(),
            });
        }
        self.check_evaluator_switch(group_id)?;
        let (session_id, _) = self
            .evaluator(group_id)
            .ok_or_else(|| EditError::Invalid("this team has no evaluator".into()))?;
        let worktrees = self.org.update(|o| {
            let gone = orphaned_by(o, std::slice::from_ref(&session_id));
            let kept = o.session(&session_id).map(|s| KeptEvaluator {
                model: s.model.clone(),
                system_prompt: s.system_prompt.clone(),
                tools: s.tools.clone(),
            });
            o.sessions.retain(|s| s.id != session_id);
            if let Some(g) = o.group_mut(group_id) {
                g.evaluator_id = None;
                g.evaluator_kept = kept;
            }
            gone
        });
        Ok(EvaluatorSwitch::Removed(Removal {
            sessions: vec![session_id],
            group: None,
            worktrees,
            worktrees_with_work: WorktreeChoice::Keep,
        }))
    }

    fn check_evaluator_switch(&self, group_id: &str) -> Result<(), EditError> {
        let (kind, mode) = self
            .org
            .read(|o| o.group(group_id).map(|g| (g.kind, g.mode)))
            .ok_or(EditError::NoSuchGroup)?;
        if kind != GroupKind::Team || !mode.spec().has_evaluator {
            return Err(EditError::Invalid(format!(
                "an evaluator scores {} cycles only: set that mode first",
                crate::model::modes::evaluator_modes()
            )));
        }
        if self.group_busy(group_id) {
            let name = self
                .org
                .read(|o| o.group(group_id).map(|g| g.name.clone()))
                .unwrap_or_default();
            return Err(EditError::Busy {
                what: format!("team `{name}`"),
                action: "switch the evaluator".into(),
            });
        }
        Ok(())
    }

    /// Records the group's interrupted run (or cycle) as over (a new run starts over instead
    /// of resuming it): a cycle is cancelled; the messages the run had taken wait for the next
    /// run again. Refused while the group runs.
    pub fn discard_interrupted(&self, group_id: &str) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::DiscardInterrupted {
                group_id: group_id.to_string(),
            });
        }
        if self.group_busy(group_id) {
            return Err(EditError::Busy {
                what: "this team".into(),
                action: "discard its interrupted run".into(),
            });
        }
        self.org.update(|o| {
            let g = o.group_mut(group_id).ok_or(EditError::NoSuchGroup)?;
            if let Some(r) = g
                .state
                .orchestrator_reflect
                .as_mut()
                .filter(|r| r.is_interrupted())
            {
                r.active = false;
                r.paused = false;
                r.outcome = Some(crate::model::CycleOutcome::Cancelled);
                r.cancelled = true;
                r.completed_at = Some(chrono::Utc::now());
            }
            if let Some(open) = g.state.run.take() {
                let later = std::mem::take(&mut g.pending_messages);
                g.pending_messages = open.pending;
                g.pending_messages.extend(later);
            }
            Ok(())
        })
    }

    /// Forgets a session's interrupted reflection (nothing to resume). Refused while the
    /// session is busy.
    pub fn discard_reflection(&self, session_id: &str) -> Result<(), EditError> {
        if let Some(remote) = &self.remote {
            return remote.call(super::remote::EditCall::DiscardReflection {
                session_id: session_id.to_string(),
            });
        }
        if self.session_busy(session_id) {
            return Err(EditError::Busy {
                what: "this session".into(),
                action: "discard its interrupted reflection".into(),
            });
        }
        self.org.update(|o| {
            let s = o.session_mut(session_id).ok_or(EditError::NoSuchSession)?;
            s.reflection = None;
            Ok(())
        })
    }

    /// Remembers what the UI shows (restored at the next start).
    /// A front end of the host keeps it in its copy (its own, never waited for).
    pub fn select(&self, group_id: Option<&str>, session_id: Option<&str>) {
        if let Some(remote) = &self.remote {
            return remote.select(group_id, session_id);
        }
        self.org.update(|o| {
            o.ui.selected_group = group_id.map(str::to_string);
            o.ui.selected_session = session_id.map(str::to_string);
        });
    }

    /// A front end of the host tells it what it shows (kept for the next start), without
    /// waiting; nothing to do for a workspace that owns its organization.
    pub fn keep_ui(&self) {
        if let Some(remote) = &self.remote {
            remote.keep_ui();
        }
    }

    /// Folds (hides the sessions of) a group in the sidebar, or unfolds it.
    /// A front end of the host folds its copy at once and tells the host without waiting.
    pub fn set_folded(&self, group_id: &str, folded: bool) {
        if let Some(remote) = &self.remote {
            return remote.set_folded(group_id, folded);
        }
        self.org.update(|o| {
            o.ui.collapsed_groups.retain(|g| g != group_id);
            if folded {
                o.ui.collapsed_groups.push(group_id.to_string());
            }
        });
    }
}

/// The worktrees of the sessions `ids` that no other session works in (they go when those
/// sessions are deleted).
fn orphaned_by(org: &Organization, ids: &[SessionId]) -> Vec<Worktree> {
    let theirs = worktrees::distinct(
        org.sessions
            .iter()
            .filter(|s| ids.contains(&s.id))
            .filter_map(|s| s.worktree.as_ref()),
    );
    theirs
        .into_iter()
        .filter(|w| {
            !org.sessions
                .iter()
                .any(|s| !ids.contains(&s.id) && s.worktree.as_ref().is_some_and(|x| x.path == w.path))
        })
        .collect()
}

/// Those of `records` no session of `org` works in.
fn unused(org: &Organization, records: Vec<Worktree>) -> Vec<Worktree> {
    records
        .into_iter()
        .filter(|w| {
            !org.sessions
                .iter()
                .any(|s| s.worktree.as_ref().is_some_and(|x| x.path == w.path))
        })
        .collect()
}

/// Which of `records` hold work (or cannot be checked), with their sessions. Blocking (git).
fn at_risk(org: &Organization, records: &[Worktree]) -> Vec<AtRisk> {
    records
        .iter()
        .filter_map(|w| {
            let why = match worktrees::status(w) {
                Ok(st) if st.has_work() => st.work(),
                Ok(_) => return None,
                Err(e) => format!("could not be checked: {e}"),
            };
            let sessions = org
                .sessions
                .iter()
                .filter(|s| s.worktree.as_ref().is_some_and(|x| x.path == w.path))
                .map(|s| s.name.clone())
                .collect();
            Some(AtRisk {
                worktree: w.clone(),
                sessions,
                why,
            })
        })
        .collect()
}

/// `<preset> · run <month day hh:mm>`: what a team made by `huddle run` is called.
fn headless_team_name(preset: &str, at: &chrono::DateTime<chrono::Local>) -> String {
    format!("{preset} · run {}", at.format("%b %d %H:%M"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_headless_team_is_named_after_its_preset_and_time() {
        use chrono::TimeZone;
        let at = chrono::Local.with_ymd_and_hms(2026, 11, 24, 9, 5, 0).unwrap();
        assert_eq!(
            headless_team_name("Code Review Team", &at),
            "Code Review Team · run Nov 24 09:05"
        );
    }
    use crate::model::{Group, GroupKind, Organization};

    fn edits() -> (Edits, GroupId) {
        let mut org = Organization::default();
        reconcile::reconcile(&mut org);
        let mut team = Group::new("Crew", GroupKind::Team);
        team.mode = Mode::OrchestratorReflect;
        let gid = team.id.clone();
        org.groups.push(team);
        let config = Config::parse("default_model: sim/demo\n", std::path::Path::new("c.yaml")).unwrap();
        (
            Edits::detached(OrgHandle::in_memory(org), config, PathBuf::from("/repo")),
            gid,
        )
    }

    #[test]
    fn names_are_validated_and_unique() {
        let (e, gid) = edits();
        let a = e.create_session(&gid, "alpha").unwrap();
        assert_eq!(
            e.create_session(&gid, "alpha"),
            Err(EditError::SessionNameTaken("alpha".into()))
        );
        assert!(matches!(
            e.create_session(&gid, "a/b"),
            Err(EditError::Invalid(_))
        ));
        assert!(matches!(e.rename_session(&a, "  "), Err(EditError::Invalid(_))));
        e.rename_session(&a, "beta").unwrap();
        assert_eq!(e.view().read(|o| o.session(&a).unwrap().name.clone()), "beta");
        assert!(
            e.view().read(|o| o.session(&a).unwrap().team),
            "a team's new session is a member"
        );
        assert_eq!(e.rename_group(&gid, "crew"), Ok(()));
        let default = e.view().read(|o| o.default_group().unwrap().id.clone());
        assert_eq!(
            e.rename_group(&default, "CREW"),
            Err(EditError::GroupNameTaken("CREW".into()))
        );
        assert_eq!(e.rename_session("nope", "x"), Err(EditError::NoSuchSession));
    }

    #[test]
    fn the_evaluator_is_kept_by_id_through_a_rename_and_switched_off_cleanly() {
        let (e, gid) = edits();
        let EvaluatorSwitch::Added { session_id, .. } = e.add_evaluator(&gid).unwrap() else {
            panic!("expected an evaluator to be added");
        };
        assert!(e.add_evaluator(&gid).is_err(), "a second evaluator is refused");
        e.rename_session(&session_id, "the-judge").unwrap();
        assert_eq!(e.evaluator(&gid), Some((session_id.clone(), "the-judge".into())));
        let EvaluatorSwitch::Removed(removal) = e.remove_evaluator(&gid).unwrap() else {
            panic!("expected a removal");
        };
        assert_eq!(removal.sessions, [session_id]);
        assert_eq!(e.evaluator(&gid), None);
        assert!(e.view().read(|o| o.group(&gid).unwrap().evaluator_id.is_none()));
    }

    #[test]
    fn switching_the_evaluator_off_and_on_keeps_its_prompt_model_and_tools() {
        let (e, gid) = edits();
        let EvaluatorSwitch::Added { session_id, .. } = e.add_evaluator(&gid).unwrap() else {
            panic!("expected an evaluator to be added");
        };
        e.set_system_prompt(&session_id, "Judge strictly.").unwrap();
        e.org.update(|o| {
            let s = o.session_mut(&session_id).unwrap();
            s.model = "sim/judge".into();
            s.tools = vec!["git".into()];
        });
        e.remove_evaluator(&gid).unwrap();
        let EvaluatorSwitch::Added {
            session_id, model, ..
        } = e.add_evaluator(&gid).unwrap()
        else {
            panic!("expected an evaluator to be added");
        };
        assert_eq!(model, "sim/judge");
        let (prompt, tools) = e.view().read(|o| {
            let s = o.session(&session_id).unwrap();
            (s.system_prompt.clone(), s.tools.clone())
        });
        assert_eq!(prompt.as_deref(), Some("Judge strictly."));
        assert_eq!(tools, vec!["git"]);
        assert!(e.view().read(|o| o.group(&gid).unwrap().evaluator_kept.is_none()));
    }

    #[test]
    fn max_iterations_use_the_one_range() {
        let (e, gid) = edits();
        assert_eq!(e.set_max_iterations(&gid, "12"), Ok(12));
        for bad in ["0", "101", "-1", "x", ""] {
            assert!(
                matches!(e.set_max_iterations(&gid, bad), Err(EditError::Invalid(_))),
                "{bad}"
            );
        }
        assert_eq!(e.view().read(|o| o.group(&gid).unwrap().max_iterations), 12);
    }

    #[test]
    fn deleting_the_evaluator_session_forgets_it_and_models_are_checked() {
        let (e, gid) = edits();
        let EvaluatorSwitch::Added { session_id, .. } = e.add_evaluator(&gid).unwrap() else {
            panic!("expected an evaluator to be added");
        };
        assert!(matches!(
            e.set_session_model(&session_id, "nope/x"),
            Err(EditError::Model(_))
        ));
        e.set_session_model(&session_id, "sim/other").unwrap();
        let removal = e.delete_session(&session_id).unwrap();
        assert_eq!(removal.sessions.len(), 1);
        assert!(e.view().read(|o| o.group(&gid).unwrap().evaluator_id.is_none()));
        let default = e.view().read(|o| o.default_group().unwrap().id.clone());
        assert!(matches!(e.delete_group(&default), Err(EditError::Invalid(_))));
        assert_eq!(e.delete_group(&gid).unwrap().group.as_deref(), Some(gid.as_str()));
    }

    fn with_servers(on: &[&str], off: &[&str]) -> ToolChange {
        ToolChange {
            on: on.iter().map(|s| s.to_string()).collect(),
            off: off.iter().map(|s| s.to_string()).collect(),
        }
    }

    const TOOLS_CONFIG: &str = "default_model: sim/demo\nmcp_servers:\n  time: { command: [mcp-server-time] }\n  git: { command: [mcp-server-git], approval: auto }\n";

    #[test]
    fn tools_are_configured_servers_only_and_a_team_gets_them_all() {
        let (e, gid) = edits();
        let config = Config::parse(TOOLS_CONFIG, std::path::Path::new("c.yaml")).unwrap();
        let e = Edits { config, ..e };
        let a = e.create_session(&gid, "alpha").unwrap();
        let b = e.create_session(&gid, "beta").unwrap();
        let tools = |id: &str| e.view().read(|o| o.session(id).unwrap().tools.clone());
        e.org
            .update(|o| o.session_mut(&a).unwrap().tools = vec!["kept-from-a-preset".into()]);

        e.set_tools(&a, &with_servers(&["time", "git"], &[])).unwrap();
        assert_eq!(tools(&a), ["kept-from-a-preset", "time", "git"]);
        e.set_tools(&a, &with_servers(&["time"], &["git"])).unwrap();
        assert_eq!(
            tools(&a),
            ["kept-from-a-preset", "time"],
            "only what was named changes"
        );

        let err = e
            .set_tools(&a, &with_servers(&["time", "weather"], &[]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`weather` is not a tool server of config.yaml (configured: git, time; add it under mcp_servers:)"
        );
        assert!(matches!(
            e.set_tools(&a, &with_servers(&[], &["kept-from-a-preset"])),
            Err(EditError::Invalid(_))
        ));
        assert_eq!(
            tools(&a),
            ["kept-from-a-preset", "time"],
            "a refused change changes nothing"
        );
        assert_eq!(
            e.set_tools("nope", &with_servers(&["time"], &[])),
            Err(EditError::NoSuchSession)
        );

        // On a team, every member; a server named in neither list stays as each has it.
        assert_eq!(e.set_group_tools(&gid, &with_servers(&["git"], &[])), Ok(2));
        assert_eq!(tools(&a), ["kept-from-a-preset", "time", "git"]);
        assert_eq!(tools(&b), ["git"]);
        assert_eq!(e.set_group_tools(&gid, &with_servers(&[], &["git"])), Ok(2));
        assert_eq!(tools(&b), Vec::<String>::new());
        assert_eq!(
            e.set_group_tools("nope", &with_servers(&["git"], &[])),
            Err(EditError::NoSuchGroup)
        );

        // Without any server configured, no name is accepted.
        let (bare, gid) = edits();
        let c = bare.create_session(&gid, "gamma").unwrap();
        let err = bare.set_tools(&c, &with_servers(&["time"], &[])).unwrap_err();
        assert!(err.to_string().contains("none is configured"), "{err}");
    }

    #[tokio::test]
    async fn tools_do_not_change_while_the_session_is_busy() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::parse(TOOLS_CONFIG, std::path::Path::new("c.yaml")).unwrap();
        let mut org = Organization::default();
        reconcile::reconcile(&mut org);
        let org = OrgHandle::in_memory(org);
        let transcripts = Transcripts::new(dir.path().join("sessions"));
        let (sink, _events) = crate::engine::EventSink::channel();
        let engine = Engine::new(
            crate::sim::providers(&config).unwrap(),
            org.clone(),
            transcripts.clone(),
            sink,
            crate::engine::EngineOptions::default(),
        );
        let e = Edits::new(
            org,
            engine.clone(),
            config,
            PathBuf::from("/repo"),
            transcripts,
            RunFiles::new(dir.path().join("runs")),
        );
        let group = e.view().read(|o| o.default_group().unwrap().id.clone());
        let id = e.create_session(&group, "clock").unwrap();
        let other = e.create_session(&group, "other").unwrap();
        let turn = engine.start_chat(&id, "What time is it?".into(), None).unwrap();
        let time = with_servers(&["time"], &[]);
        assert_eq!(
            e.set_tools(&id, &time),
            Err(EditError::Busy {
                what: "clock".into(),
                action: "change its tools".into()
            })
        );
        assert!(matches!(
            e.set_group_tools(&group, &time),
            Err(EditError::Busy { .. })
        ));
        assert_eq!(
            e.set_tools(&other, &time),
            Ok(()),
            "another plain session of the group is not held up"
        );
        turn.await;
        e.set_tools(&id, &time).unwrap();
        assert_eq!(e.view().read(|o| o.session(&id).unwrap().tools.clone()), ["time"]);
    }
}
