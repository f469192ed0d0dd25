//! Bringing a worktree's work back: a plan first (the commits that would come in, and anything
//! that stands in the way), then a merge (`git merge --no-ff`) or a cherry-pick of those exact
//! commits into the repository's current branch. A conflict or any other failure is aborted
//! (`git merge --abort` / `git cherry-pick --abort`) and the repository checked to be exactly as
//! before (same HEAD, no changes): never half done.

use std::ffi::OsString;

use super::git::{Git, nul_fields};
use super::status::count_changes;
use super::{Worktree, WorktreeError};

/// One commit that would come in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub id: String,
    /// Its first line.
    pub summary: String,
}

impl Commit {
    /// The first 10 characters of the id.
    pub fn short_id(&self) -> &str {
        self.id.get(..10).unwrap_or(&self.id)
    }
}

/// Merge (a merge commit, `--no-ff`) or cherry-pick (each commit copied, `-x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeMethod {
    Merge,
    CherryPick,
}

impl MergeMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            MergeMethod::Merge => "merge",
            MergeMethod::CherryPick => "cherry-pick",
        }
    }
}

/// What merging a worktree would do, to show before asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergePlan {
    pub worktree: Worktree,
    /// The repository's current branch, where the work goes; `None` on a detached HEAD.
    pub into: Option<String>,
    /// The repository's HEAD when the plan was made (the merge refuses if it moved).
    pub head: String,
    /// The worktree branch's commit when the plan was made (exactly this is merged).
    pub tip: String,
    /// The commits that would come in (`git log HEAD..<branch>`), newest first.
    pub commits: Vec<Commit>,
    /// Some of them are merge commits (cherry-pick is then refused).
    pub has_merges: bool,
    /// Uncommitted changes in the worktree: they are not part of the merge.
    pub uncommitted: usize,
    /// Why merging now would be refused, if it would (said before asking).
    pub blocked: Option<String>,
}

impl MergePlan {
    /// The plan in words: where, what, what is left out, and why it cannot be merged now.
    pub fn describe(&self) -> String {
        let mut text = self.describe_commits();
        if let Some(why) = &self.blocked {
            text.push_str(&crate::text::sanitize::display(&format!(
                "cannot merge now: {why}\n"
            )));
        }
        text
    }

    /// The plan in words without why it is blocked (said once, elsewhere: `huddle worktrees
    /// merge` says it on stderr).
    pub fn describe_commits(&self) -> String {
        let into = self.into.as_deref().unwrap_or("(detached HEAD)");
        let mut text = format!(
            "{} into {} of {}: {} commit{}\n",
            self.worktree.branch,
            into,
            self.worktree.repo.display(),
            self.commits.len(),
            if self.commits.len() == 1 { "" } else { "s" }
        );
        for c in &self.commits {
            text.push_str(&format!("  {} {}\n", c.short_id(), c.summary));
        }
        if self.uncommitted > 0 {
            text.push_str(&format!(
                "note: the worktree has {} uncommitted change{} that will not be merged (commit them in {} first)\n",
                self.uncommitted,
                if self.uncommitted == 1 { "" } else { "s" },
                self.worktree.path.display()
            ));
        }
        crate::text::sanitize::display(&text).into_owned()
    }
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOutcome {
    pub method: MergeMethod,
    pub into: String,
    pub old_head: String,
    pub new_head: String,
    /// Commits brought in.
    pub commits: usize,
}

fn commit_of(git: &Git, rev: &str) -> Result<Option<String>, WorktreeError> {
    let spec = format!("{rev}^{{commit}}");
    if !git.check(&["rev-parse", "--verify", "--quiet", &spec])? {
        return Ok(None);
    }
    Ok(Some(git.text(&["rev-parse", "--verify", &spec])?))
}

/// A merge, cherry-pick or rebase the repository is in the middle of.
fn operation_in_progress(git: &Git) -> Result<Option<&'static str>, WorktreeError> {
    for (head, what) in [
        ("MERGE_HEAD", "a merge"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
    ] {
        if git.check(&["rev-parse", "--verify", "--quiet", head])? {
            return Ok(Some(what));
        }
    }
    for (dir, what) in [
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase or git am"),
        ("sequencer", "a cherry-pick or revert"),
    ] {
        let path = git.text(&["rev-parse", "--git-path", dir])?;
        let path = std::path::Path::new(&path);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            git.dir().join(path)
        };
        if path.exists() {
            return Ok(Some(what));
        }
    }
    Ok(None)
}

/// Changed tracked files in the repository (untracked ones do not matter: git refuses to
/// overwrite them before changing anything).
fn tracked_changes(git: &Git) -> Result<usize, WorktreeError> {
    let out = git.run(&[
        "--no-optional-locks",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=no",
    ])?;
    Ok(nul_fields(&out.stdout).len())
}

/// Why the repository cannot take a merge now.
fn blocker(git: &Git, into: Option<&str>) -> Result<Option<String>, WorktreeError> {
    if into.is_none() {
        return Ok(Some(
            "the repository has no current branch (detached HEAD): check out the branch to merge into first"
                .into(),
        ));
    }
    if let Some(what) = operation_in_progress(git)? {
        return Ok(Some(format!(
            "{what} is in progress in the repository: finish or abort it first"
        )));
    }
    let changed = tracked_changes(git)?;
    if changed > 0 {
        return Ok(Some(format!(
            "the repository has uncommitted changes ({changed} file{}): commit or stash them first, so that a conflict can be undone exactly",
            if changed == 1 { "" } else { "s" }
        )));
    }
    Ok(None)
}

/// What merging `wt`'s branch into the repository's current branch would bring. Blocking.
pub fn merge_plan(wt: &Worktree) -> Result<MergePlan, WorktreeError> {
    let repo = Git::new(&wt.repo);
    let head = commit_of(&repo, "HEAD")?.ok_or_else(|| WorktreeError::NoCommits(wt.repo.clone()))?;
    let tip = commit_of(&repo, &format!("refs/heads/{}", wt.branch))?.ok_or_else(|| {
        WorktreeError::Refused(format!(
            "the branch {} is gone (deleted by hand?); nothing to merge",
            wt.branch
        ))
    })?;
    let into = repo.output(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
    let into = into
        .status
        .success()
        .then(|| String::from_utf8_lossy(&into.stdout).trim().to_string());
    let range = format!("{head}..{tip}");
    let log = repo.run(&[
        "log",
        "--no-color",
        "--topo-order",
        "-z",
        "--format=%H%x09%P%x09%s",
        &range,
        "--",
    ])?;
    let mut commits = Vec::new();
    let mut has_merges = false;
    for entry in nul_fields(&log.stdout) {
        let mut parts = entry.splitn(3, '\t');
        let id = parts.next().unwrap_or("").trim().to_string();
        let parents = parts.next().unwrap_or("");
        has_merges |= parents.split_whitespace().count() > 1;
        let summary = parts.next().unwrap_or("").to_string();
        if !id.is_empty() {
            commits.push(Commit { id, summary });
        }
    }
    let uncommitted = if wt.path.is_dir() {
        count_changes(&Git::new(&wt.path))?
    } else {
        0
    };
    let blocked = blocker(&repo, into.as_deref())?;
    Ok(MergePlan {
        worktree: wt.clone(),
        into,
        head,
        tip,
        commits,
        has_merges,
        uncommitted,
        blocked,
    })
}

/// Merges (or cherry-picks) exactly what `plan` showed into the repository's current branch.
/// Refused, with nothing changed, when the repository or the branch moved since the plan, when
/// something blocks it, or when there is nothing to bring. A conflict is aborted and reported
/// ([`WorktreeError::Conflict`]); the repository is then checked to be exactly as before.
/// Blocking.
pub fn merge(plan: &MergePlan, method: MergeMethod) -> Result<MergeOutcome, WorktreeError> {
    let wt = &plan.worktree;
    let repo = Git::new(&wt.repo);
    let now = merge_plan(wt)?;
    if now.head != plan.head || now.tip != plan.tip || now.into != plan.into {
        return Err(WorktreeError::Refused(format!(
            "the repository or {} changed since the commits were listed; look at them again before merging",
            wt.branch
        )));
    }
    if let Some(why) = now.blocked {
        return Err(WorktreeError::Refused(format!("cannot merge: {why}")));
    }
    let into = now.into.unwrap_or_default();
    if now.commits.is_empty() {
        return Err(WorktreeError::Refused(format!(
            "nothing to merge: {into} already has every commit of {}",
            wt.branch
        )));
    }
    if method == MergeMethod::CherryPick && now.has_merges {
        return Err(WorktreeError::Refused(format!(
            "{} has merge commits, which cannot be cherry-picked; merge it instead",
            wt.branch
        )));
    }
    let args: Vec<OsString> = match method {
        MergeMethod::Merge => vec![
            "merge".into(),
            "--no-ff".into(),
            "--no-edit".into(),
            "-m".into(),
            format!("Merge {} (huddle worktree)", wt.branch).into(),
            now.tip.clone().into(),
        ],
        MergeMethod::CherryPick => {
            let mut args: Vec<OsString> = vec!["cherry-pick".into(), "-x".into()];
            // Oldest first.
            args.extend(now.commits.iter().rev().map(|c| OsString::from(&c.id)));
            args
        }
    };
    let out = repo.output(&args)?;
    if out.status.success() {
        let new_head = commit_of(&repo, "HEAD")?.unwrap_or_default();
        tracing::info!(branch = %wt.branch, into = %into, method = method.as_str(), "worktree merged");
        return Ok(MergeOutcome {
            method,
            into,
            old_head: now.head,
            new_head,
            commits: now.commits.len(),
        });
    }
    let failure = repo.failure(&args, &out);
    let conflicted = repo
        .output(&["diff", "--name-only", "--diff-filter=U", "-z"])
        .map(|o| nul_fields(&o.stdout))
        .unwrap_or_default();
    undo(&repo, method, &now.head)?;
    if conflicted.is_empty() {
        Err(WorktreeError::Refused(format!(
            "{failure}; nothing was merged and the repository is exactly as before"
        )))
    } else {
        Err(WorktreeError::Conflict {
            method: method.as_str(),
            branch: wt.branch.clone(),
            into,
            files: conflicted,
        })
    }
}

/// Aborts a failed merge or cherry-pick and checks the repository is back at `head` with no
/// changes (it had none before: merging requires it). As a last resort, when the abort left
/// anything behind, the repository is reset to `head`, which is exactly where it was.
fn undo(repo: &Git, method: MergeMethod, head: &str) -> Result<(), WorktreeError> {
    if operation_in_progress(repo)?.is_some() {
        let abort = match method {
            MergeMethod::Merge => ["merge", "--abort"],
            MergeMethod::CherryPick => ["cherry-pick", "--abort"],
        };
        if let Err(e) = repo.run(&abort) {
            tracing::warn!(error = %e, "aborting a failed {} did not work", method.as_str());
        }
    }
    let restored = |repo: &Git| -> Result<bool, WorktreeError> {
        Ok(commit_of(repo, "HEAD")?.as_deref() == Some(head) && tracked_changes(repo)? == 0)
    };
    if restored(repo)? {
        return Ok(());
    }
    tracing::warn!(
        head,
        "the repository was not back where it was after aborting; resetting it"
    );
    let reset = repo.run(&["reset", "--hard", "--quiet", head]);
    if reset.is_ok() && restored(repo)? {
        return Ok(());
    }
    Err(WorktreeError::NotRestored(format!(
        "the {} failed and the repository {} could not be put back at {head}: look at it with `git status` before anything else",
        method.as_str(),
        repo.dir().display()
    )))
}
