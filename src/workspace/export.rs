//! Saving a team as a preset (a Squad folder in its repo plus a user preset), with the
//! confirmation ledger: the user is shown every file first, and a confirmed export replaces only
//! the existing files they were shown, so a file that changed while the dialog was open is never
//! replaced unseen. Blocking file work: call it off the UI thread.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crate::config::Paths;
use crate::presets::squad::{ExportError, export_group, export_group_confirmed, plan_export};
use crate::store::OrgView;

/// Why an export did not happen.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportOutcome {
    /// These files exist with different content: ask before replacing them.
    WouldOverwrite {
        files: Vec<String>,
    },
    Failed(String),
}

/// Per group, the existing files shown to the user as replaced (the plan, or the files a
/// refused export named). Cheap to clone; clones share the ledger.
#[derive(Clone, Default)]
pub struct ExportLedger(Arc<Mutex<HashMap<String, Vec<PathBuf>>>>);

impl ExportLedger {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, Vec<PathBuf>>) -> R) -> R {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut map)
    }

    /// Records that these files of the group were shown as replaced.
    fn add(&self, group_id: &str, files: &[PathBuf]) {
        self.with(|m| {
            let shown = m.entry(group_id.to_string()).or_default();
            for f in files {
                if !shown.contains(f) {
                    shown.push(f.clone());
                }
            }
        });
    }

    /// The files shown for the group, forgotten (a confirmation is used once).
    fn take(&self, group_id: &str) -> Vec<PathBuf> {
        self.with(|m| m.remove(group_id).unwrap_or_default())
    }
}

/// Exports teams of one organization.
#[derive(Clone)]
pub struct Exporter {
    org: OrgView,
    paths: Paths,
    /// Where a group without a repo of its own is exported.
    default_repo: PathBuf,
    ledger: ExportLedger,
}

impl Exporter {
    pub fn new(org: OrgView, paths: Paths, default_repo: PathBuf) -> Exporter {
        Exporter {
            org,
            paths,
            default_repo,
            ledger: ExportLedger::default(),
        }
    }

    /// The files an export would write: (path, exists already). Shown to the user; replaces
    /// what an earlier dialog showed.
    pub fn plan(&self, group_id: &str) -> Result<Vec<(String, bool)>, String> {
        let org = self.org.snapshot();
        let repo = org
            .group(group_id)
            .and_then(|g| g.repo.clone())
            .unwrap_or_else(|| self.default_repo.clone());
        let plan = plan_export(&org, group_id, &repo, &self.paths).map_err(|e| e.to_string())?;
        self.ledger.take(group_id);
        self.ledger.add(group_id, &plan.change);
        let create = plan.create.iter().map(|f| (f.display().to_string(), false));
        let change = plan.change.iter().map(|f| (f.display().to_string(), true));
        Ok(create.chain(change).collect())
    }

    /// Writes the team. With `confirmed`, existing files are replaced only if the user was
    /// shown them; any other file that would change makes the export refuse and name it.
    pub fn export(&self, group_id: &str, confirmed: bool) -> Result<String, ExportOutcome> {
        let org = self.org.snapshot();
        let repo = org
            .group(group_id)
            .and_then(|g| g.repo.clone())
            .unwrap_or_else(|| self.default_repo.clone());
        let shown = if confirmed {
            self.ledger.take(group_id)
        } else {
            Vec::new()
        };
        let exported = if confirmed {
            export_group_confirmed(&org, group_id, &repo, &self.paths, &shown)
        } else {
            export_group(&org, group_id, &repo, &self.paths, false)
        };
        match exported {
            Ok(report) => {
                let mut lines = report.lines();
                lines.push(format!("preset {}", report.preset_file.display()));
                Ok(lines.join("\n"))
            }
            Err(ExportError::WouldOverwrite { files } | ExportError::Unconfirmed { files }) => {
                // The dialog that follows shows these; confirming it allows them (and still the
                // ones confirmed before).
                self.ledger.add(group_id, &shown);
                self.ledger.add(group_id, &files);
                Err(ExportOutcome::WouldOverwrite {
                    files: files.iter().map(|f| f.display().to_string()).collect(),
                })
            }
            Err(e) => Err(ExportOutcome::Failed(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_is_per_group_and_used_once() {
        let shown = ExportLedger::default();
        shown.add("g", &[PathBuf::from("a"), PathBuf::from("b")]);
        shown.add("g", &[PathBuf::from("b"), PathBuf::from("c")]);
        shown.add("h", &[PathBuf::from("x")]);
        assert_eq!(
            shown.take("g"),
            [PathBuf::from("a"), PathBuf::from("b"), PathBuf::from("c")]
        );
        assert!(shown.take("g").is_empty());
        assert_eq!(shown.take("h"), [PathBuf::from("x")]);
    }
}
