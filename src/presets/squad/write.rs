//! Saving a team group as a Squad team in its repo (and as a user YAML preset).
//!
//! The team folder is the one discovery reads (`.squad`, or an existing legacy `.ai-team`, else a
//! new `.squad`). Owned files: its `team.md`, each worker's charter (where discovery found it,
//! else `agents/<name>/charter.md`), `decisions.md` and `routing.md` when the group has that
//! context, `huddle.yaml` when the team has what Squad's files cannot say (see
//! [`super::extras`]), and `<config>/presets/<team>.yaml`. Nothing else is touched (history, logs, casting,
//! other agents). An existing team.md is edited in place (see [`super::team_md`]); a charter
//! keeps its front matter. Left alone, and reported as kept with the reason: a ledger that
//! exists with other content (ledgers are only ever created), a shortened (capped) ledger
//! anywhere, a charter longer than the prompt cap, and a team.md or charter that is not UTF-8
//! or is binary. Any other file whose content would change is only replaced with `force` (or
//! when the user confirmed exactly that file); otherwise the error lists exactly those files.
//! Every write is atomic ([`write_atomic`]: temporary file, fsync, rename, fsync of the folder)
//! and keeps the replaced file's BOM and line endings.

use std::path::{Path, PathBuf};

use crate::config::Paths;
use crate::model::{Organization, PresetWorker};
use crate::naming::{slug_or, team_slug};
use crate::presets::instantiate::preset_from_group;
use crate::presets::preset_to_yaml;
use crate::store::{StoreError, is_not_regular, read_regular, write_atomic};

use super::charter::{charter_prompt, role_prompt, strip_front_matter, worker_role};
use super::extras::{EXTRAS_FILE, Extras};
use super::read::{
    capped_context, carries_cap_marker, coordinator_prompt, current_roster, repo_name, team_dir,
};
use super::report::{ExportPlan, ExportReport, KeptFile, KeptReason};
use super::safety::decode;
use super::team_md::{TeamText, edit_team_md, fresh_team_md};

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("no group with id {0}")]
    NoGroup(String),
    #[error("group `{0}` has no workers to save")]
    NoWorkers(String),
    #[error("these files exist with different content; save again with force to replace them:\n{}",
        .files.iter().map(|f| format!("  {}", f.display())).collect::<Vec<_>>().join("\n"))]
    WouldOverwrite { files: Vec<PathBuf> },
    #[error("these files changed since the plan was confirmed and would be replaced unseen; nothing was written:\n{}",
        .files.iter().map(|f| format!("  {}", f.display())).collect::<Vec<_>>().join("\n"))]
    Unconfirmed { files: Vec<PathBuf> },
    #[error("refusing to write {path}: {reason}")]
    Unsafe { path: PathBuf, reason: String },
    #[error(
        "{link} is a symbolic link to {target}, which does not exist; remove the link or make it point at a folder inside the repository (nothing was written)"
    )]
    DanglingLink { link: PathBuf, target: PathBuf },
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Creating, writing or replacing a file failed; says which and where.
    #[error(transparent)]
    Write(#[from] StoreError),
    #[error("cannot serialise the preset: {0}")]
    Yaml(String),
}

/// How the file being replaced was encoded, so an edited file keeps its BOM and line endings.
#[derive(Debug, Clone, Copy, Default)]
struct Encoding {
    bom: bool,
    crlf: bool,
}

impl Encoding {
    fn of(bytes: &[u8]) -> Encoding {
        Encoding {
            bom: bytes.starts_with(b"\xEF\xBB\xBF"),
            crlf: bytes.windows(2).any(|w| w == b"\r\n"),
        }
    }

    fn apply(self, text: &str) -> String {
        let text = if self.crlf {
            text.replace('\n', "\r\n")
        } else {
            text.to_string()
        };
        if self.bom { format!("\u{feff}{text}") } else { text }
    }
}

/// A file as it is on disk before the export.
enum Existing {
    Missing,
    /// As discovery reads it (BOM dropped, `\n` line endings); `lossy` when it was not UTF-8.
    Text {
        text: String,
        lossy: bool,
        encoding: Encoding,
    },
    Binary,
    /// A FIFO, a device, a folder...: never opened for reading, never written over.
    NotRegular,
}

/// What the export does with one file.
enum Action {
    /// Create it, or replace it (`exists`) with this text.
    Write {
        path: PathBuf,
        content: String,
        exists: bool,
    },
    Unchanged(PathBuf),
    Kept(KeptFile),
}

fn kept(path: PathBuf, reason: KeptReason, exists: bool) -> Action {
    Action::Kept(KeptFile { path, reason, exists })
}

/// Plans the export of `group_id` exactly as [`export_group`] would carry it out.
pub fn plan_export(
    org: &Organization,
    group_id: &str,
    repo: &Path,
    paths: &Paths,
) -> Result<ExportPlan, ExportError> {
    let prepared = prepare(org, group_id, repo, paths)?;
    let mut plan = ExportPlan::default();
    for action in prepared.actions {
        match action {
            Action::Write {
                path, exists: true, ..
            } => plan.change.push(path),
            Action::Write { path, .. } => plan.create.push(path),
            Action::Unchanged(path) => plan.unchanged.push(path),
            Action::Kept(k) => plan.kept.push(k),
        }
    }
    Ok(plan)
}

/// Writes the team group `group_id` into the repo's team folder (the one discovery reads:
/// `.squad`, or an existing legacy `.ai-team`, else a new `.squad`) and the user presets
/// folder. Existing files that would change need `force`.
pub fn export_group(
    org: &Organization,
    group_id: &str,
    repo: &Path,
    paths: &Paths,
    force: bool,
) -> Result<ExportReport, ExportError> {
    let prepared = prepare(org, group_id, repo, paths)?;
    let changed = prepared.changed();
    if !changed.is_empty() && !force {
        return Err(ExportError::WouldOverwrite { files: changed });
    }
    prepared.carry_out()
}

/// [`export_group`] after the user confirmed a plan: the existing files in `confirmed` may be
/// replaced; if any other existing file would change (it changed on disk while the plan was
/// shown), nothing is written and the error names those files.
pub fn export_group_confirmed(
    org: &Organization,
    group_id: &str,
    repo: &Path,
    paths: &Paths,
    confirmed: &[PathBuf],
) -> Result<ExportReport, ExportError> {
    let prepared = prepare(org, group_id, repo, paths)?;
    let unconfirmed: Vec<PathBuf> = prepared
        .changed()
        .into_iter()
        .filter(|p| !confirmed.contains(p))
        .collect();
    if !unconfirmed.is_empty() {
        return Err(ExportError::Unconfirmed { files: unconfirmed });
    }
    prepared.carry_out()
}

/// Every file of an export and what is to happen to it.
struct Prepared {
    team_dir: PathBuf,
    preset_file: PathBuf,
    actions: Vec<Action>,
}

impl Prepared {
    /// Existing files that would be replaced.
    fn changed(&self) -> Vec<PathBuf> {
        self.actions
            .iter()
            .filter_map(|a| match a {
                Action::Write {
                    path, exists: true, ..
                } => Some(path.clone()),
                _ => None,
            })
            .collect()
    }

    fn carry_out(self) -> Result<ExportReport, ExportError> {
        let mut report = ExportReport {
            team_dir: self.team_dir,
            preset_file: self.preset_file,
            ..ExportReport::default()
        };
        for action in self.actions {
            match action {
                Action::Write { path, content, .. } => {
                    write_file(&path, &content)?;
                    report.written.push(path);
                }
                Action::Unchanged(path) => report.unchanged.push(path),
                Action::Kept(k) => report.kept.push(k),
            }
        }
        Ok(report)
    }
}

fn prepare(org: &Organization, group_id: &str, repo: &Path, paths: &Paths) -> Result<Prepared, ExportError> {
    let preset = preset_from_group(org, group_id).ok_or_else(|| ExportError::NoGroup(group_id.into()))?;
    if preset.workers.is_empty() {
        return Err(ExportError::NoWorkers(preset.name.clone()));
    }
    // The folder discovery reads: writing a new `.squad` beside a legacy `.ai-team` would
    // shadow it.
    let team_dir = team_dir(repo).unwrap_or_else(|| repo.join(".squad"));
    check_inside(repo, &team_dir)?;
    let folder = team_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| ".squad".into());
    let workers: Vec<(String, &PresetWorker)> =
        preset.workers.iter().map(|w| (agent_name(&w.name), w)).collect();
    // The team already there, read the way discovery reads it: its roster decides what an
    // edited team.md keeps, and its charters are written back where they were found.
    let current = current_roster(repo, &team_dir);
    let mut actions = Vec::new();

    let team_md_path = team_dir.join("team.md");
    // Every existing file is read to be compared or edited: none may lead out of the repo.
    check_inside(repo, &team_md_path)?;
    let team = TeamText {
        name: &preset.name,
        description: preset.description.as_deref(),
        mode: preset.mode,
        workers: &workers,
        folder: &folder,
    };
    actions.push(match read_existing(&team_md_path)? {
        Existing::Missing => write_new(team_md_path, fresh_team_md(&team)),
        Existing::Binary => kept(team_md_path, KeptReason::Binary, true),
        Existing::NotRegular => kept(team_md_path, KeptReason::NotARegularFile, true),
        Existing::Text {
            text,
            lossy,
            encoding,
        } => {
            let roster: Vec<(String, String)> = current
                .iter()
                .map(|e| (e.worker.clone(), e.role.clone()))
                .collect();
            let edited = edit_team_md(&text, &team, &roster, &repo_name(repo));
            if edited == text {
                Action::Unchanged(team_md_path)
            } else if lossy {
                kept(team_md_path, KeptReason::NotUtf8, true)
            } else {
                replace(team_md_path, &edited, encoding)
            }
        }
    });

    let mut charter_paths: Vec<PathBuf> = Vec::new();
    for (name, w) in &workers {
        let prompt = w.system_prompt.clone().unwrap_or_else(|| {
            role_prompt(
                w.display_name.as_deref().unwrap_or(name),
                &worker_role(w),
                &preset.name,
            )
        });
        let found = current
            .iter()
            .find(|e| e.worker == *name)
            .and_then(|e| e.charter.as_ref())
            .map(|rel| team_dir.join(rel))
            .filter(|p| !charter_paths.contains(p));
        let path = found.unwrap_or_else(|| team_dir.join("agents").join(name).join("charter.md"));
        charter_paths.push(path.clone());
        check_inside(repo, &path)?;
        let existing = read_existing(&path)?;
        actions.push(charter_action(path, prompt.trim(), existing));
    }

    for (file, text) in [
        ("decisions.md", &preset.shared_context),
        ("routing.md", &preset.routing_context),
    ] {
        if let Some(text) = text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            let path = team_dir.join(file);
            check_inside(repo, &path)?;
            let existing = read_existing(&path)?;
            actions.push(ledger_action(path, file, text, existing));
        }
    }

    // What Squad's files cannot say, in huddle's own file (written only when there is any).
    let extras = Extras::of(&preset, coordinator_prompt(repo, &team_dir).as_deref());
    let extras_path = team_dir.join(EXTRAS_FILE);
    check_inside(repo, &extras_path)?;
    let existing = read_existing(&extras_path)?;
    if let Some(action) = extras_action(extras_path, &extras, existing)? {
        actions.push(action);
    }

    let preset_file = paths
        .presets_dir()
        .join(format!("{}.yaml", team_slug(&preset.name)));
    let yaml = preset_to_yaml(&preset).map_err(|e| ExportError::Yaml(e.to_string()))?;
    actions.push(match read_existing(&preset_file)? {
        Existing::Missing => write_new(preset_file.clone(), yaml),
        Existing::Text { text, .. } if text == yaml => Action::Unchanged(preset_file.clone()),
        Existing::Text { encoding, .. } => replace(preset_file.clone(), &yaml, encoding),
        Existing::Binary => replace(preset_file.clone(), &yaml, Encoding::default()),
        Existing::NotRegular => kept(preset_file.clone(), KeptReason::NotARegularFile, true),
    });

    Ok(Prepared {
        team_dir,
        preset_file,
        actions,
    })
}

fn write_new(path: PathBuf, content: String) -> Action {
    Action::Write {
        path,
        content,
        exists: false,
    }
}

fn replace(path: PathBuf, text: &str, encoding: Encoding) -> Action {
    Action::Write {
        path,
        content: encoding.apply(text),
        exists: true,
    }
}

/// A charter: written as its front matter (kept from the original) and the prompt, unless the
/// original is longer than the prompt cap (the group holds only its start) or is not text huddle
/// can edit safely.
fn charter_action(path: PathBuf, prompt: &str, existing: Existing) -> Action {
    let (text, lossy, encoding) = match existing {
        Existing::Missing => return write_new(path, format!("{prompt}\n")),
        Existing::Binary => return kept(path, KeptReason::Binary, true),
        Existing::NotRegular => return kept(path, KeptReason::NotARegularFile, true),
        Existing::Text {
            text,
            lossy,
            encoding,
        } => (text, lossy, encoding),
    };
    let (current, cut) = charter_prompt(&text);
    if current == prompt {
        return Action::Unchanged(path);
    }
    if cut {
        return kept(path, KeptReason::CharterLongerThanCap, true);
    }
    if lossy {
        return kept(path, KeptReason::NotUtf8, true);
    }
    replace(path, &charter_text(&text, prompt), encoding)
}

/// `original`'s front matter (and the blank lines after it), then `prompt`.
fn charter_text(original: &str, prompt: &str) -> String {
    let body = strip_front_matter(original);
    let front = &original[..original.len() - body.len()];
    let gap = &body[..body.len() - body.trim_start().len()];
    if front.is_empty() {
        format!("{prompt}\n")
    } else {
        format!("{front}{gap}{prompt}\n")
    }
}

/// A ledger (decisions.md, routing.md) is only ever created: one on disk that says something
/// else has grown since the team was read (the Scribe appends), and the group's copy of a long
/// one is shortened. A shortened copy is never written at all.
fn ledger_action(path: PathBuf, file: &str, text: &str, existing: Existing) -> Action {
    match existing {
        Existing::Missing if carries_cap_marker(text) => kept(path, KeptReason::ShortenedLedger, false),
        Existing::Missing => write_new(path, format!("{text}\n")),
        Existing::Text { text: on_disk, .. } if capped_context(&on_disk, file).as_deref() == Some(text) => {
            Action::Unchanged(path)
        }
        Existing::Text { .. } => kept(path, KeptReason::LedgerChangedOnDisk, true),
        Existing::Binary => kept(path, KeptReason::Binary, true),
        Existing::NotRegular => kept(path, KeptReason::NotARegularFile, true),
    }
}

/// `huddle.yaml`: created when the team has something to put in it, left alone when it already
/// says the same (however it is formatted), replaced otherwise (an owned file: needs force).
fn extras_action(path: PathBuf, extras: &Extras, existing: Existing) -> Result<Option<Action>, ExportError> {
    let yaml = || extras.to_yaml().map_err(ExportError::Yaml);
    Ok(Some(match existing {
        Existing::Missing if extras.is_empty() => return Ok(None),
        Existing::Missing => write_new(path, yaml()?),
        Existing::Text { text, .. } if Extras::parse(&text).as_ref() == Ok(extras) => Action::Unchanged(path),
        Existing::Text { encoding, .. } => replace(path, &yaml()?, encoding),
        Existing::Binary => kept(path, KeptReason::Binary, true),
        Existing::NotRegular => kept(path, KeptReason::NotARegularFile, true),
    }))
}

/// An existing file, read to be compared or edited. Only a regular file is opened for reading
/// (a FIFO at a charter path would block the read forever).
fn read_existing(path: &Path) -> Result<Existing, ExportError> {
    match read_regular(path) {
        Ok(bytes) => Ok(match decode(&bytes) {
            Ok(file) => Existing::Text {
                text: file.text,
                lossy: file.lossy,
                encoding: Encoding::of(&bytes),
            },
            Err(_) => Existing::Binary,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Existing::Missing),
        Err(e) if is_not_regular(&e) => Ok(Existing::NotRegular),
        Err(source) => Err(ExportError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A folder-safe agent name: the `@worker:` name, lower case, non-alphanumerics to `-`.
pub fn agent_name(worker: &str) -> String {
    slug_or(worker, "agent")
}

/// Refuses paths whose existing part resolves outside the repository (a symlinked `.squad` or
/// agent folder).
fn check_inside(repo: &Path, path: &Path) -> Result<(), ExportError> {
    let unsafe_err = |reason: String| ExportError::Unsafe {
        path: path.to_path_buf(),
        reason,
    };
    let repo_c = repo.canonicalize().map_err(|e| {
        unsafe_err(format!(
            "the repository {} cannot be resolved: {e}",
            repo.display()
        ))
    })?;
    let mut existing = path;
    while !existing.exists() {
        // A link that leads nowhere (`agents -> ../gone`) would make creating the folder fail
        // with a bare "File exists": say what it is instead.
        if let Ok(meta) = std::fs::symlink_metadata(existing)
            && meta.file_type().is_symlink()
        {
            return Err(ExportError::DanglingLink {
                link: existing.to_path_buf(),
                target: std::fs::read_link(existing).unwrap_or_default(),
            });
        }
        match existing.parent() {
            Some(p) => existing = p,
            None => return Ok(()),
        }
    }
    let c = existing
        .canonicalize()
        .map_err(|e| unsafe_err(format!("cannot be resolved: {e}")))?;
    if c.starts_with(&repo_c) {
        Ok(())
    } else {
        Err(unsafe_err(format!(
            "it resolves outside the repository (to {})",
            c.display()
        )))
    }
}

/// Creates the file's folder, then writes the file with [`write_atomic`].
fn write_file(path: &Path, content: &str) -> Result<(), ExportError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| ExportError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    Ok(write_atomic(path, content.as_bytes())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charter_keeps_its_front_matter_and_the_gap_after_it() {
        assert_eq!(
            charter_text("---\nname: m\ntools: [\"read\"]\n---\n\n# Old\nBody\n", "# New"),
            "---\nname: m\ntools: [\"read\"]\n---\n\n# New\n"
        );
        assert_eq!(charter_text("# Old\n", "# New"), "# New\n");
        assert_eq!(charter_text("---\nunterminated\n", "# New"), "# New\n");
    }

    #[test]
    fn ledgers_are_only_created() {
        let text = |t: &str| Existing::Text {
            text: t.into(),
            lossy: false,
            encoding: Encoding::default(),
        };
        let is_kept = |a: &Action, r: KeptReason| matches!(a, Action::Kept(k) if k.reason == r);
        let p = PathBuf::from("d.md");
        assert!(matches!(
            ledger_action(p.clone(), "d.md", "We use Rust.", Existing::Missing),
            Action::Write { exists: false, .. }
        ));
        assert!(matches!(
            ledger_action(p.clone(), "d.md", "We use Rust.", text("We use Rust.\n")),
            Action::Unchanged(_)
        ));
        let changed = ledger_action(p.clone(), "d.md", "We use Rust.", text("We use Go.\n"));
        assert!(is_kept(&changed, KeptReason::LedgerChangedOnDisk));
        let capped = "x\n\n[... d.md continues: 9 more characters not included]";
        assert!(is_kept(
            &ledger_action(p, "d.md", capped, Existing::Missing),
            KeptReason::ShortenedLedger
        ));
    }

    #[test]
    fn files_are_written_atomically_into_new_folders() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".squad/agents/ann/charter.md");
        write_file(&path, "# Ann\n").unwrap();
        write_file(&path, "# Ann, again\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# Ann, again\n");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["charter.md"], "no temporary file is left");
        // A failure names the step that failed (the store's write_atomic reports it).
        std::fs::create_dir(dir.path().join("taken.md")).unwrap();
        let err = write_file(&dir.path().join("taken.md"), "x").unwrap_err();
        assert!(err.to_string().starts_with("cannot replace "), "{err}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temporary file is left"
        );
    }
}
