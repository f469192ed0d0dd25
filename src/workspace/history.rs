//! Earlier runs read back from their run files (`runs/<group-id>/<run-id>.jsonl`): what the
//! TUI replays after a restart, and what a trace view reads.

use crate::engine::events::{RunId, RunRecord};
use crate::store::RunFiles;

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
