//! Earlier runs read back from their run files (`runs/<group-id>/<run-id>.jsonl`): what the
//! TUI replays after a restart, and what a trace view reads.

use crate::engine::events::{EventKind, RunId, RunKey, RunRecord};
use crate::model::forecast::{Basis, FORECAST_RUNS, Forecast, RunSample, forecast};
use crate::model::{CycleOutcome, Organization};
use crate::store::RunFiles;

/// Bytes read from the end of a run file to find its end (`run_ended` is a short last line).
const TAIL_BYTES: u64 = 16 * 1024;

/// What a team run that did its work used, from its file's last line: `None` for a run that
/// never ended, was stopped or interrupted, failed, or was written before runs recorded their
/// totals (and for another run than a team run: a member's chat).
pub fn run_sample(runs: &RunFiles, group_id: &str, run_id: &str) -> Option<RunSample> {
    let lines = runs.read_tail(group_id, run_id, TAIL_BYTES).ok()?;
    let record: RunRecord = lines.iter().rev().find_map(|l| serde_json::from_str(l).ok())?;
    let EventKind::RunEnded {
        key: RunKey::Team { .. },
        outcome: Some(outcome),
        failed: None,
        totals: Some(totals),
        ..
    } = record.event.kind
    else {
        return None;
    };
    // Only runs that did their work: one a budget, a rate limit, errors or the user stopped
    // would pull the forecast towards where it was stopped.
    if !matches!(
        outcome,
        CycleOutcome::Completed | CycleOutcome::GoalMet | CycleOutcome::MaxIterations | CycleOutcome::Stalled
    ) {
        return None;
    }
    Some(RunSample {
        cost_usd: totals.known_cost(),
        tokens: totals.usage.total(),
        duration_ms: totals.duration_ms,
    })
}

/// The forecast of a run of the team `group_id` (when it exists) from its earlier runs and
/// those of the other teams made from the preset `source_preset` (`<tier>:<name>`): the newest
/// [`FORECAST_RUNS`] of them. Blocking (reads run files): call it off the UI thread.
pub fn forecast_runs(
    runs: &RunFiles,
    org: &Organization,
    group_id: Option<&str>,
    source_preset: Option<&str>,
) -> (Option<Forecast>, Basis) {
    let preset = source_preset.or_else(|| {
        group_id
            .and_then(|id| org.group(id))
            .and_then(|g| g.source_preset.as_deref())
    });
    let mut groups: Vec<(&str, bool)> = group_id.map(|id| (id, true)).into_iter().collect();
    if let Some(preset) = preset {
        groups.extend(
            org.groups
                .iter()
                .filter(|g| g.source_preset.as_deref() == Some(preset) && Some(g.id.as_str()) != group_id)
                .map(|g| (g.id.as_str(), false)),
        );
    }
    // Every candidate run id, newest first, with whose it is.
    let mut ids: Vec<(String, &str, bool)> = Vec::new();
    for (group, own) in groups {
        for run in runs.list(group).unwrap_or_default() {
            ids.push((run, group, own));
        }
    }
    ids.sort_by(|a, b| b.0.cmp(&a.0));
    let mut samples = Vec::new();
    let mut basis = Basis {
        own: 0,
        preset: preset.map(|p| (0, p.split_once(':').map_or(p, |(_, name)| name).to_string())),
    };
    for (run, group, own) in &ids {
        if samples.len() == FORECAST_RUNS {
            break;
        }
        if let Some(sample) = run_sample(runs, group, run) {
            samples.push(sample);
            match (&mut basis.preset, own) {
                (_, true) => basis.own += 1,
                (Some((n, _)), false) => *n += 1,
                (None, false) => {}
            }
        }
    }
    samples.reverse();
    (forecast(&samples), basis)
}

/// One run file as read back: the run's id, its records, and where it stands among the group's
/// runs (0-based `index` of `total`, oldest first).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedRun {
    pub run_id: RunId,
    pub records: Vec<RunRecord>,
    pub index: usize,
    pub total: usize,
    /// Lines that could not be read (a line torn by a crash); they stay in the file.
    pub skipped: usize,
}

/// Which of a group's runs to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhichRun {
    Newest,
    /// By position among the runs on disk, oldest first.
    At(usize),
    Id(RunId),
}

/// Reads one run file of a group (`Ok(None)`: the group has no runs on disk). Blocking: call
/// it off the UI thread.
pub fn read_run(runs: &RunFiles, group_id: &str, which: &WhichRun) -> Result<Option<LoadedRun>, String> {
    let ids = runs.list(group_id).map_err(|e| e.to_string())?;
    if ids.is_empty() {
        return Ok(None);
    }
    let index = match which {
        WhichRun::Newest => ids.len() - 1,
        WhichRun::At(i) => (*i).min(ids.len() - 1),
        WhichRun::Id(id) => match ids.iter().position(|r| r == id) {
            Some(i) => i,
            None => return Err(format!("run {id} is no longer on disk (old runs are pruned)")),
        },
    };
    let lines = runs
        .read_lines(group_id, &ids[index])
        .map_err(|e| e.to_string())?;
    let mut records = Vec::with_capacity(lines.len());
    let mut skipped = 0;
    for line in &lines {
        match serde_json::from_str::<RunRecord>(line) {
            Ok(r) => records.push(r),
            Err(e) => {
                tracing::warn!(group = group_id, error = %e, "unreadable run file line skipped");
                skipped += 1;
            }
        }
    }
    Ok(Some(LoadedRun {
        run_id: ids[index].clone(),
        records,
        index,
        total: ids.len(),
        skipped,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::{EngineEvent, EventKind};
    use crate::store::RunLog;

    fn record(kind: EventKind) -> RunRecord {
        RunRecord::now(EngineEvent {
            group_id: "g".into(),
            group: "G".into(),
            run_id: Some("r".into()),
            execution: None,
            kind,
        })
    }

    fn ended(group: &str, run: &str, outcome: CycleOutcome, cost: Option<f64>, tokens: u64) -> RunRecord {
        RunRecord::now(EngineEvent {
            group_id: group.into(),
            group: "G".into(),
            run_id: Some(run.into()),
            execution: None,
            kind: EventKind::RunEnded {
                key: RunKey::team(group),
                outcome: Some(outcome),
                iterations: 1,
                failed: None,
                totals: Some(crate::engine::events::RunTotals {
                    duration_ms: tokens * 10,
                    usage: crate::model::Usage::new(tokens, 0),
                    cost_usd: cost,
                    unpriced_turns: u32::from(cost.is_none()),
                }),
            },
        })
    }

    #[test]
    fn a_forecast_reads_the_ends_of_the_teams_runs_and_its_presets() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path());
        let mut org = Organization::default();
        let mut own = crate::model::Group::new("Review", crate::model::GroupKind::Team);
        own.source_preset = Some("builtin:Code Review".into());
        let mut sibling = crate::model::Group::new("Review 2", crate::model::GroupKind::Team);
        sibling.source_preset = own.source_preset.clone();
        let other = crate::model::Group::new("Other", crate::model::GroupKind::Team);
        let (a, b, c) = (own.id.clone(), sibling.id.clone(), other.id.clone());
        org.groups.extend([own, sibling, other]);
        // Nothing on disk: no forecast.
        let (none, basis) = forecast_runs(&files, &org, Some(&a), None);
        assert_eq!(none, None);
        assert_eq!(basis.preset, Some((0, "Code Review".into())));
        let log: RunLog<RunRecord> = RunLog::start(files.clone(), 50);
        log.append(
            &a,
            "r1",
            ended(&a, "r1", CycleOutcome::Completed, Some(0.10), 100),
        );
        log.append(&a, "r2", ended(&a, "r2", CycleOutcome::GoalMet, Some(0.30), 300));
        // Stopped: not what a run costs.
        log.append(&a, "r3", ended(&a, "r3", CycleOutcome::Cancelled, Some(9.0), 9));
        for (run, outcome) in [
            ("r7", CycleOutcome::BudgetExhausted),
            ("r8", CycleOutcome::RateLimited),
            ("r9", CycleOutcome::ErrorBudget),
            ("r10", CycleOutcome::Failed),
        ] {
            log.append(&a, run, ended(&a, run, outcome, Some(9.0), 9));
        }
        log.append(&b, "r4", ended(&b, "r4", CycleOutcome::Completed, None, 200));
        log.append(&c, "r5", ended(&c, "r5", CycleOutcome::Completed, Some(50.0), 1));
        // A run that never ended, and a member's chat.
        log.append(
            &a,
            "r6",
            record(EventKind::IterationStarted {
                iteration: 1,
                max_iterations: 0,
            }),
        );
        log.flush();
        let (f, basis) = forecast_runs(&files, &org, Some(&a), None);
        let f = f.unwrap();
        assert_eq!((f.runs, f.priced_runs), (3, 2));
        assert_eq!(f.tokens.median, 200.0);
        assert!((f.cost_usd.unwrap().median - 0.20).abs() < 1e-12);
        assert_eq!(basis.own, 2);
        assert_eq!(basis.preset, Some((1, "Code Review".into())));
        // Before a team is made from the preset: its other teams' runs.
        let (f, basis) = forecast_runs(&files, &org, None, Some("builtin:Code Review"));
        assert_eq!(f.unwrap().runs, 3);
        assert_eq!(basis.own, 0);
        // A team without a preset: its own runs only.
        let (f, _) = forecast_runs(&files, &org, Some(&c), None);
        assert_eq!(f.unwrap().cost_usd.unwrap().median, 50.0);
    }

    #[test]
    fn the_newest_run_or_a_named_one_is_read_back_skipping_torn_lines() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path());
        assert_eq!(read_run(&files, "g", &WhichRun::Newest), Ok(None));
        let log: RunLog<RunRecord> = RunLog::start(files.clone(), 10);
        log.append(
            "g",
            "r1",
            record(EventKind::IterationStarted {
                iteration: 1,
                max_iterations: 0,
            }),
        );
        log.append(
            "g",
            "r2",
            record(EventKind::IterationStarted {
                iteration: 2,
                max_iterations: 0,
            }),
        );
        log.append("g", "r2", record(EventKind::CyclePaused));
        log.flush();
        // A crash tore the last line of r2.
        let path = files.path("g", "r2").unwrap();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"at\":\"2026-");
        std::fs::write(&path, text).unwrap();
        let newest = read_run(&files, "g", &WhichRun::Newest).unwrap().unwrap();
        assert_eq!((newest.run_id.as_str(), newest.index, newest.total), ("r2", 1, 2));
        assert_eq!(newest.records.len(), 2);
        assert_eq!(newest.skipped, 1);
        let first = read_run(&files, "g", &WhichRun::Id("r1".into()))
            .unwrap()
            .unwrap();
        assert!(matches!(
            first.records[0].event.kind,
            EventKind::IterationStarted { iteration: 1, .. }
        ));
        assert_eq!(
            read_run(&files, "g", &WhichRun::At(0)).unwrap().unwrap().run_id,
            "r1"
        );
        assert_eq!(
            read_run(&files, "g", &WhichRun::At(9)).unwrap().unwrap().run_id,
            "r2"
        );
        let gone = read_run(&files, "g", &WhichRun::Id("gone".into())).unwrap_err();
        assert!(gone.contains("no longer on disk"), "{gone}");
    }
}
