//! Saving a team group as a Squad team in its repo (and as a user YAML preset).
//!
//! Owned files: `.squad/team.md`, each worker's charter (where discovery found it, else
//! `.squad/agents/<name>/charter.md`), `.squad/decisions.md` and `.squad/routing.md` when the
//! group has that context, and `<config>/presets/<team>.yaml`. Nothing else is touched (history,
//! logs, casting, other agents). An existing team.md is edited in place (see [`super::team_md`]).
//! A context the group only holds in capped form (it ends with the cut marker) never replaces an
//! existing file: that file is reported as kept. A file whose content would change is only
//! replaced with `force`; without it the error lists exactly those files. Every write is atomic
//! (temporary file, then rename) and keeps the replaced file's BOM and line endings.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::config::Paths;
use crate::model::{Organization, PresetWorker};
use crate::presets::instantiate::preset_from_group;
use crate::presets::{preset_to_yaml, slug};

use super::charter::{charter_prompt, role_prompt};
use super::read::{capped_context, carries_cap_marker, current_roster};
use super::safety::decode;
use super::team_md::{TeamText, edit_team_md, fresh_team_md};

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportReport {
    /// The `.squad` folder written to.
    pub team_dir: PathBuf,
    /// Files created or replaced.
    pub written: Vec<PathBuf>,
    /// Files that already said the same thing and were left alone.
    pub unchanged: Vec<PathBuf>,
    /// Files that differ but were deliberately left alone: ledgers the group only holds in
    /// shortened (capped) form, which must never replace the full file.
    pub kept: Vec<PathBuf>,
    /// The YAML preset in the user presets folder.
    pub preset_file: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("no group with id {0}")]
    NoGroup(String),
    #[error("group `{0}` has no workers to save")]
    NoWorkers(String),
    #[error("these files exist with different content; save again with force to replace them:\n{}",
        .files.iter().map(|f| format!("  {}", f.display())).collect::<Vec<_>>().join("\n"))]
    WouldOverwrite { files: Vec<PathBuf> },
    #[error("refusing to write {path}: {reason}")]
    Unsafe { path: PathBuf, reason: String },
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot serialise the preset: {0}")]
    Yaml(String),
}

/// How an existing file is judged equal to what would be written.
enum Same {
    /// Byte for byte.
    Exact,
    /// Reading it back yields this prompt (front matter and the length cap allowed).
    Charter(String),
    /// Reading it back as the named file yields this context (the length cap allowed), so a
    /// ledger longer than the cap is never replaced by its shortened form.
    Context(&'static str, String),
}

struct Planned {
    path: PathBuf,
    content: String,
    same: Same,
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

/// Writes the team group `group_id` to `<repo>/.squad/` and the user presets folder.
/// What an export would do, without writing anything (the TUI shows it for confirmation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportPlan {
    /// Files that do not exist yet.
    pub create: Vec<PathBuf>,
    /// Existing files whose content would change (needs `force`).
    pub change: Vec<PathBuf>,
    /// Existing files that already say the same thing.
    pub unchanged: Vec<PathBuf>,
    /// Files deliberately left alone (shortened ledgers).
    pub kept: Vec<PathBuf>,
}

/// Plans the export of `group_id` exactly as [`export_group`] would carry it out.
pub fn plan_export(
    org: &Organization,
    group_id: &str,
    repo: &Path,
    paths: &Paths,
) -> Result<ExportPlan, ExportError> {
    let prepared = prepare(org, group_id, repo, paths)?;
    let mut plan = ExportPlan {
        change: prepared.changed,
        unchanged: prepared.report.unchanged,
        kept: prepared.report.kept,
        ..ExportPlan::default()
    };
    plan.create = prepared
        .to_write
        .into_iter()
        .map(|(p, _)| p.path)
        .filter(|p| !plan.change.contains(p))
        .collect();
    Ok(plan)
}

pub fn export_group(
    org: &Organization,
    group_id: &str,
    repo: &Path,
    paths: &Paths,
    force: bool,
) -> Result<ExportReport, ExportError> {
    let Prepared {
        mut report,
        changed,
        to_write,
    } = prepare(org, group_id, repo, paths)?;
    if !changed.is_empty() && !force {
        return Err(ExportError::WouldOverwrite { files: changed });
    }
    for (p, encoding) in to_write {
        write_atomic(&p.path, &encoding.apply(&p.content))?;
        report.written.push(p.path);
    }
    Ok(report)
}

/// Every file of an export with its content, sorted into what is unchanged, kept, and to write.
struct Prepared {
    report: ExportReport,
    /// Existing files among `to_write`.
    changed: Vec<PathBuf>,
    to_write: Vec<(Planned, Encoding)>,
}

fn prepare(org: &Organization, group_id: &str, repo: &Path, paths: &Paths) -> Result<Prepared, ExportError> {
    let preset = preset_from_group(org, group_id).ok_or_else(|| ExportError::NoGroup(group_id.into()))?;
    if preset.workers.is_empty() {
        return Err(ExportError::NoWorkers(preset.name.clone()));
    }
    let team_dir = repo.join(".squad");
    check_inside(repo, &team_dir)?;
    let workers: Vec<(String, &PresetWorker)> =
        preset.workers.iter().map(|w| (agent_name(&w.name), w)).collect();
    // The team already in `.squad/`, read the way discovery reads it: its roster decides what
    // an edited team.md keeps, and its charters are written back where they were found.
    let current = current_roster(repo);
    let mut kept = Vec::new();

    let team_md_path = team_dir.join("team.md");
    // The existing team.md is read to be edited: it must not be a link leading out of the repo.
    check_inside(repo, &team_md_path)?;
    let team = TeamText {
        name: &preset.name,
        description: preset.description.as_deref(),
        mode: preset.mode,
        workers: &workers,
    };
    let team_md = match read_existing(&team_md_path)? {
        Some((text, _)) => {
            let roster: Vec<(String, String)> = current
                .iter()
                .map(|e| (e.worker.clone(), e.role.clone()))
                .collect();
            edit_team_md(&text, &team, &roster, &repo_name(repo))
        }
        None => fresh_team_md(&team),
    };
    let mut plan = vec![Planned {
        path: team_md_path,
        content: team_md,
        same: Same::Exact,
    }];
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
        plan.push(Planned {
            path,
            content: format!("{}\n", prompt.trim()),
            same: Same::Charter(prompt.trim().to_string()),
        });
    }
    for (file, text) in [
        ("decisions.md", &preset.shared_context),
        ("routing.md", &preset.routing_context),
    ] {
        if let Some(text) = text.as_deref().filter(|t| !t.trim().is_empty()) {
            let path = team_dir.join(file);
            // A shortened ledger must never replace a file: the full one may be far longer.
            if carries_cap_marker(text) && path.exists() {
                kept.push(path);
                continue;
            }
            plan.push(Planned {
                path,
                content: format!("{}\n", text.trim()),
                same: Same::Context(file, text.trim().to_string()),
            });
        }
    }
    let preset_file = paths
        .presets_dir()
        .join(format!("{}.yaml", file_stem(&preset.name)));
    let yaml = preset_to_yaml(&preset).map_err(|e| ExportError::Yaml(e.to_string()))?;
    plan.push(Planned {
        path: preset_file.clone(),
        content: yaml,
        same: Same::Exact,
    });

    let mut report = ExportReport {
        team_dir: team_dir.clone(),
        preset_file,
        kept,
        ..ExportReport::default()
    };
    let mut changed = Vec::new();
    let mut to_write = Vec::new();
    for p in plan {
        if p.path.starts_with(&team_dir) {
            check_inside(repo, &p.path)?;
        }
        match read_existing(&p.path)? {
            Some((existing, encoding)) => {
                if is_same(&existing, &p) {
                    report.unchanged.push(p.path);
                } else {
                    changed.push(p.path.clone());
                    to_write.push((p, encoding));
                }
            }
            None => to_write.push((p, Encoding::default())),
        }
    }
    Ok(Prepared {
        report,
        changed,
        to_write,
    })
}

impl ExportReport {
    /// One line per file, for the CLI and the TUI: `wrote`, `unchanged`, `kept` (with why).
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .written
            .iter()
            .map(|f| format!("wrote {}", f.display()))
            .collect();
        lines.extend(
            self.unchanged
                .iter()
                .map(|f| format!("unchanged {}", f.display())),
        );
        lines.extend(self.kept.iter().map(|f| {
            format!(
                "kept {} (the team holds only a shortened copy of it)",
                f.display()
            )
        }));
        lines
    }
}

/// An existing file as discovery reads it (BOM dropped, `\n` line endings, lossy UTF-8) and how
/// it was encoded; `None` when there is none.
fn read_existing(path: &Path) -> Result<Option<(String, Encoding)>, ExportError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = decode(&bytes).map(|t| t.text).unwrap_or_default();
            Ok(Some((text, Encoding::of(&bytes))))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ExportError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The repository folder's name, as discovery uses it for `<repo> squad`.
fn repo_name(repo: &Path) -> String {
    let canonical = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repo".into())
}

fn is_same(normalised: &str, planned: &Planned) -> bool {
    match &planned.same {
        Same::Exact => normalised == planned.content,
        Same::Charter(prompt) => charter_prompt(normalised).0 == *prompt,
        Same::Context(name, text) => capped_context(normalised, name).as_deref() == Some(text.as_str()),
    }
}

/// A folder-safe agent name: the `@worker:` name, lower case, non-alphanumerics to `-`.
pub fn agent_name(worker: &str) -> String {
    let s = slug(worker);
    if s.is_empty() { "agent".into() } else { s }
}

fn file_stem(name: &str) -> String {
    let s = slug(name);
    if s.is_empty() { "team".into() } else { s }
}

/// The worker's role: its own, else the first sentence of its system prompt without a leading
/// "You are a/an".
pub fn worker_role(w: &PresetWorker) -> String {
    if let Some(role) = w.role.as_deref().filter(|r| !r.trim().is_empty()) {
        return role.trim().to_string();
    }
    w.system_prompt
        .as_deref()
        .map(role_from_prompt)
        .unwrap_or_default()
}

pub fn role_from_prompt(prompt: &str) -> String {
    let first_line = prompt.trim().lines().next().unwrap_or("");
    let sentence = first_line
        .find(['.', '!', '?'])
        .map_or(first_line, |i| &first_line[..i])
        .trim();
    let lower = sentence.to_lowercase();
    let rest = ["you are an ", "you are a ", "you're an ", "you're a ", "you are "]
        .iter()
        .find(|p| lower.starts_with(*p))
        .map_or(sentence, |p| &sentence[p.len()..]);
    rest.trim().to_string()
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

/// Temporary file in the same folder, flushed, then renamed over the target.
fn write_atomic(path: &Path, content: &str) -> Result<(), ExportError> {
    let io = |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_come_from_the_first_sentence() {
        assert_eq!(
            role_from_prompt("You are a security auditor. You look."),
            "security auditor"
        );
        assert_eq!(role_from_prompt("You are an editor!"), "editor");
        assert_eq!(role_from_prompt("Checks tests\nmore"), "Checks tests");
        assert_eq!(role_from_prompt(""), "");
    }
}
