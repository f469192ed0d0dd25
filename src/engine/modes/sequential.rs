//! Sequential: sessions in order, each seeing the earlier answers of this round, labelled. A
//! failed session passes its error on as its answer and the round continues.
//!
//! Resume point: the round again from the first member; the answers on disk come back at once
//! (each later prompt is the same, carrying them), so it continues at the member whose turn it was.

use std::time::Instant;

use super::super::events::{EventKind, Phase};
use super::super::protocol::{WorkerResult, sequential_prompt};
use super::super::run::Run;
use super::super::{EngineError, RunReport};
use super::one_pass::{finish_round, phase, start, with_pending};

pub(super) async fn run(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    let (prompt, pending) = with_pending(run, prompt);
    start(run);
    let members = run.team.participants.clone();
    let mut earlier: Vec<WorkerResult> = Vec::new();
    let mut results = Vec::new();
    let mut last = String::new();
    for member in &members {
        if run.cancelled() {
            break;
        }
        phase(run, Phase::Dispatch);
        let started = Instant::now();
        let result = run
            .step(member, sequential_prompt(&prompt, &earlier), None, Some(1))
            .await;
        run.emit(EventKind::WorkerFinished {
            iteration: 1,
            worker: member.name.clone(),
            session_id: member.id.clone(),
            success: result.success,
            duration_ms: started.elapsed().as_millis() as u64,
        });
        last = result.text_or_error();
        earlier.push(WorkerResult {
            name: member.shown.clone(),
            success: result.success,
            duration: started.elapsed(),
            text: last.clone(),
        });
        results.push(result);
    }
    let results: Vec<_> = results.iter().collect();
    Ok(finish_round(run, last, pending, &results))
}
