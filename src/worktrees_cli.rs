//! `huddle worktrees list|diff|merge|remove`: the same functions the TUI calls, for a terminal
//! or a script. `list`, `diff` and `merge` read `organization.json` (they change no huddle file,
//! so they work while huddle runs); `remove` changes the records, so the host does it on its
//! workspace ([`remove_on`], asked by `host_cli`). Exit codes as for the rest of the CLI: 0 done, 1 refused or failed
//! (the message says why; nothing was changed), 2 usage (no such group or session, `merge`
//! without `--yes` when nobody can answer).

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use crate::cli::{OutputError, WorktreeTarget, WorktreesCommand, note, print_out};
use crate::config::Paths;
use crate::model::{Organization, Worktree};
use crate::store::OrganizationFile;
use crate::text::sanitize;
use crate::workspace::{EditError, Edits};

use crate::worktrees::{
    MergeMethod, WorktreeError, distinct, merge, merge_plan, reconcile, session_statuses,
};

const USAGE: u8 = 2;
const FAILED: u8 = 1;

/// Runs one `huddle worktrees` command; the exit code, or standard output lost.
pub fn run(paths: &Paths, repo: &Path, command: WorktreesCommand) -> Result<u8, OutputError> {
    let result = match command {
        WorktreesCommand::List { group } => list(paths, repo, group.as_deref()),
        WorktreesCommand::Diff { target, stat } => show_diff(paths, &target, stat),
        WorktreesCommand::Merge {
            target,
            cherry_pick,
            yes,
        } => merge_command(paths, &target, cherry_pick, yes),
        // The records change: the host does it (see `host_cli`).
        WorktreesCommand::Remove { .. } => Err(usage("`huddle worktrees remove` goes through the host")),
    };
    match result {
        Ok(code) => Ok(code),
        Err(Failure::Output(e)) => Err(e),
        Err(Failure::Code(code, message)) => {
            note(format_args!("huddle: {}", sanitize::display(&message)));
            Ok(code)
        }
    }
}

enum Failure {
    Output(OutputError),
    Code(u8, String),
}

impl From<OutputError> for Failure {
    fn from(e: OutputError) -> Self {
        Failure::Output(e)
    }
}

fn usage(message: impl Into<String>) -> Failure {
    Failure::Code(USAGE, message.into())
}

fn failed(message: impl Into<String>) -> Failure {
    Failure::Code(FAILED, message.into())
}

/// The organization as saved (no lock: nothing is written).
fn read_org(paths: &Paths) -> Result<Organization, Failure> {
    let file = OrganizationFile::new(paths.organization_file());
    file.inspect()
        .map_err(|reason| failed(format!("{} is unreadable: {reason}", file.path().display())))
        .map(Option::unwrap_or_default)
}

fn group_id(org: &Organization, name: &str) -> Result<String, Failure> {
    org.group_by_name(name).map(|g| g.id.clone()).ok_or_else(|| {
        let known: Vec<&str> = org.groups.iter().map(|g| g.name.as_str()).collect();
        usage(format!("no group named `{name}` (groups: {})", known.join(", ")))
    })
}

/// The worktrees `target` names: a session's, each of a team's once, or a folder no session
/// records (read from git; only inside huddle's worktrees folder).
fn targets(paths: &Paths, org: &Organization, target: &WorktreeTarget) -> Result<Vec<Worktree>, Failure> {
    if let Some(path) = &target.path {
        let path = std::path::absolute(path).map_err(|e| usage(format!("{}: {e}", path.display())))?;
        if let Some(s) = org
            .sessions
            .iter()
            .find(|s| s.worktree.as_ref().is_some_and(|w| w.path == path))
        {
            return Err(usage(format!(
                "{} is the worktree of session `{}`: use --session",
                path.display(),
                s.name
            )));
        }
        return crate::worktrees::orphan(&paths.worktrees_dir(), &path)
            .map(|w| vec![w])
            .map_err(|e| match e {
                WorktreeError::NoSuchDir(_) => usage(e.to_string()),
                e => failed(e.to_string()),
            });
    }
    if let Some(name) = &target.session {
        let s = org
            .session_by_name(name)
            .ok_or_else(|| usage(format!("no session named `{name}`")))?;
        return s.worktree.clone().map(|w| vec![w]).ok_or_else(|| {
            usage(format!(
                "session `{name}` has no worktree (it works in {})",
                repo_of(org, s)
            ))
        });
    }
    let name = target.group.as_deref().unwrap_or_default();
    let id = group_id(org, name)?;
    let list = distinct(org.sessions_in(&id).iter().filter_map(|s| s.worktree.as_ref()));
    if list.is_empty() {
        return Err(usage(format!(
            "team `{name}` has no worktrees (its members work in the repository)"
        )));
    }
    Ok(list)
}

fn repo_of(org: &Organization, s: &crate::model::Session) -> String {
    s.working_dir(org.group(&s.group_id))
        .map_or_else(|| "huddle's directory".into(), |d| d.display().to_string())
}

/// Session names working in `w`.
fn users(org: &Organization, w: &Worktree) -> Vec<String> {
    org.sessions
        .iter()
        .filter(|s| s.worktree.as_ref().is_some_and(|x| x.path == w.path))
        .map(|s| s.name.clone())
        .collect()
}

fn list(paths: &Paths, repo: &Path, group: Option<&str>) -> Result<u8, Failure> {
    let org = read_org(paths)?;
    let only = group.map(|g| group_id(&org, g)).transpose()?;
    let states = session_statuses(&org, only.as_deref());
    let mut out = String::new();
    let mut groups: Vec<&str> = Vec::new();
    for s in &states {
        if !groups.contains(&s.group_id.as_str()) {
            groups.push(&s.group_id);
        }
    }
    for gid in groups {
        let (name, strategy) = org
            .group(gid)
            .map(|g| (g.name.clone(), g.worktrees.to_string()))
            .unwrap_or_else(|| ("(no group)".into(), "-".into()));
        out.push_str(&format!("{name} · {strategy}\n"));
        let mine: Vec<_> = states.iter().filter(|s| s.group_id == gid).collect();
        for w in distinct(mine.iter().map(|s| &s.worktree)) {
            let state = mine
                .iter()
                .find(|s| s.worktree.path == w.path)
                .map(|s| match &s.status {
                    Ok(st) => st.describe(),
                    Err(e) => format!("cannot tell: {e}"),
                })
                .unwrap_or_default();
            out.push_str(&format!(
                "  {}  {}  {state}\n      {}\n",
                users(&org, &w).join(", "),
                w.branch,
                w.path.display()
            ));
        }
    }
    if states.is_empty() {
        out.push_str("no team worktrees\n");
    }
    if only.is_none() {
        let found = reconcile(&paths.worktrees_dir(), &org, &[repo.to_path_buf()]);
        if !found.is_empty() {
            out.push_str("\nto look at:\n");
            for line in found.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    print_out(&sanitize::display(&out))?;
    Ok(0)
}

fn show_diff(paths: &Paths, target: &WorktreeTarget, stat: bool) -> Result<u8, Failure> {
    let org = read_org(paths)?;
    // A patch piped to a file stays byte for byte (for `git apply`); on a terminal it is
    // sanitised like everything else huddle prints.
    let raw = !std::io::stdout().is_terminal();
    for w in targets(paths, &org, target)? {
        let d = crate::worktrees::diff(&w).map_err(|e| failed(e.to_string()))?;
        let mut head = diff_header(&users(&org, &w), &d);
        for f in &d.files {
            let from = match &f.kind {
                crate::worktrees::ChangeKind::Renamed { from }
                | crate::worktrees::ChangeKind::Copied { from } => {
                    format!(" (from {from})")
                }
                _ => String::new(),
            };
            head.push_str(&format!("#  {} {}{from}\n", f.kind.letter(), f.path));
        }
        for s in &d.skipped {
            head.push_str(&format!("#  (not shown: {s} is not a regular file)\n"));
        }
        print_out(&sanitize::display(&head))?;
        if !stat {
            let mut patch = d.patch;
            if d.truncated {
                patch.push_str(&format!(
                    "# (cut at {} bytes; see the rest with git in {})\n",
                    crate::worktrees::PATCH_MAX_BYTES,
                    w.path.display()
                ));
            }
            let patch = if raw {
                patch
            } else {
                sanitize::display(&patch).into_owned()
            };
            print_out(&patch)?;
        }
    }
    Ok(0)
}

/// The first line of a worktree's diff: its branch, who works in it, what it is compared
/// against and how many files differ. A worktree no session records (`--path`) says so, and
/// that its base is where its branch forked.
fn diff_header(users: &[String], d: &crate::worktrees::WorktreeDiff) -> String {
    let who = if users.is_empty() {
        "no session records it".to_string()
    } else {
        users.join(", ")
    };
    let base = d.base.get(..10).unwrap_or(&d.base);
    let base = if d.worktree.base_commit.is_empty() {
        format!("{base}, where it forked from the repository's current branch")
    } else {
        base.to_string()
    };
    let n = d.files.len();
    format!(
        "# {} ({who}) against {base} · {n} file{}\n",
        d.worktree.branch,
        if n == 1 { "" } else { "s" }
    )
}

/// Asks on the terminal; true for `y` / `yes`.
fn confirm(question: &str) -> bool {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

fn merge_command(
    paths: &Paths,
    target: &WorktreeTarget,
    cherry_pick: bool,
    yes: bool,
) -> Result<u8, Failure> {
    let org = read_org(paths)?;
    let mut plans = Vec::new();
    for w in targets(paths, &org, target)? {
        plans.push(merge_plan(&w).map_err(|e| failed(e.to_string()))?);
    }
    let with_commits: Vec<_> = plans.iter().filter(|p| !p.commits.is_empty()).collect();
    let plan = match with_commits.as_slice() {
        [] => {
            let what = match (&target.session, &target.group, &target.path) {
                (Some(name), _, _) | (None, Some(name), _) => name.clone(),
                (None, None, Some(path)) => path.display().to_string(),
                (None, None, None) => String::new(),
            };
            let into = plans
                .first()
                .and_then(|p| p.into.clone())
                .unwrap_or_else(|| "HEAD".into());
            print_out(&sanitize::display(&format!(
                "nothing to merge: {into} already has every commit of `{what}`'s worktree\n"
            )))?;
            return Ok(0);
        }
        [one] => *one,
        many => {
            let names: Vec<String> = many.iter().map(|p| users(&org, &p.worktree).join(", ")).collect();
            return Err(usage(format!(
                "{} worktrees of this team have commits to merge ({}); merge them one at a time with --session",
                many.len(),
                names.join("; ")
            )));
        }
    };
    // Why it is blocked is said once, on stderr.
    print_out(&plan.describe_commits())?;
    if let Some(why) = &plan.blocked {
        return Err(failed(format!("not merged: {why}")));
    }
    let method = if cherry_pick {
        MergeMethod::CherryPick
    } else {
        MergeMethod::Merge
    };
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(usage(
                "merging needs --yes when standard input is not a terminal (the commits are listed above)",
            ));
        }
        let into = plan.into.as_deref().unwrap_or("HEAD");
        let question = format!(
            "{} these {} commit(s) into {into}?",
            if cherry_pick { "Cherry-pick" } else { "Merge" },
            plan.commits.len()
        );
        if !confirm(&sanitize::display(&question)) {
            return Err(failed("not merged"));
        }
    }
    match merge(plan, method) {
        Ok(done) => {
            print_out(&sanitize::display(&format!(
                "{} {} commit(s) of {} into {} ({} -> {})\n",
                if cherry_pick { "cherry-picked" } else { "merged" },
                done.commits,
                plan.worktree.branch,
                done.into,
                done.old_head.get(..10).unwrap_or(&done.old_head),
                done.new_head.get(..10).unwrap_or(&done.new_head)
            )))?;
            Ok(0)
        }
        Err(e @ WorktreeError::Conflict { .. }) => Err(failed(e.to_string())),
        Err(e) => Err(failed(format!("not merged: {e}"))),
    }
}

/// `huddle worktrees remove`, done on an open workspace (the host's: the records change):
/// what it prints on standard output, or the exit code and why not.
pub fn remove_on(
    edits: &Edits,
    group: Option<String>,
    session: Option<String>,
    path: Option<std::path::PathBuf>,
    force: bool,
) -> Result<String, (u8, String)> {
    let refusal = |f: Failure| match f {
        Failure::Code(code, message) => (code, message),
        Failure::Output(e) => (e.exit_code(), e.to_string()),
    };
    let snapshot = edits.view().snapshot();
    let edit_failure = |e: EditError| match e {
        EditError::NoSuchGroup | EditError::NoSuchSession | EditError::Invalid(_) => usage(e.to_string()),
        EditError::Worktree(m) if m.contains("force the removal") => failed(format!("{m} (--force)")),
        other => failed(other.to_string()),
    };
    let removed = if let Some(name) = session {
        let id = snapshot
            .session_by_name(&name)
            .map(|s| s.id.clone())
            .ok_or_else(|| refusal(usage(format!("no session named `{name}`"))))?;
        vec![
            edits
                .remove_worktree(&id, force)
                .map_err(|e| refusal(edit_failure(e)))?,
        ]
    } else if let Some(name) = group {
        let id = group_id(&snapshot, &name).map_err(refusal)?;
        edits
            .remove_group_worktrees(&id, force)
            .map_err(|e| refusal(edit_failure(e)))?
    } else if let Some(path) = path {
        vec![
            edits
                .remove_orphan_worktree(&path, force)
                .map_err(|e| refusal(edit_failure(e)))?,
        ]
    } else {
        return Err(refusal(usage("say which: --group, --session or --path")));
    };
    let mut out = String::new();
    for r in &removed {
        out.push_str(&format!(
            "removed {}{}{}\n",
            r.worktree.path.display(),
            if r.branch_deleted {
                format!(" and branch {}", r.worktree.branch)
            } else {
                String::new()
            },
            r.discarded
                .as_deref()
                .map(|d| format!(" (thrown away: {d})"))
                .unwrap_or_default()
        ));
    }
    if removed.is_empty() {
        out.push_str("no worktrees to remove\n");
    }
    Ok(sanitize::display(&out).into_owned())
}
