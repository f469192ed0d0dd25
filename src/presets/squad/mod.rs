//! Repo teams in the Squad format (`.squad/`, legacy `.ai-team/`): read as a repo-tier preset,
//! and written back from a team group. See SPEC section 7 and `reference/squad-format.md`.

pub mod charter;
pub mod extras;
pub mod read;
pub mod report;
pub mod roster;
pub mod safety;
pub mod team_md;
pub mod write;

use std::path::PathBuf;

pub use read::{discover, team_dir};
pub use report::{ExportPlan, ExportReport, KeptFile, KeptReason};
pub use write::{ExportError, export_group, export_group_confirmed, plan_export};

/// A team folder that exists but cannot be used; the message says why.
#[derive(Debug, thiserror::Error)]
pub enum SquadError {
    #[error(
        "{dir}: no team.md, so this is not a usable Squad team (create one with a `| Member | Role |` table)"
    )]
    NoTeamFile { dir: PathBuf },
    #[error("{path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("{dir}: no workers: {reason}")]
    NoWorkers { dir: PathBuf, reason: String },
}
