//! Broadcast: every session gets the prompt at once; one failing does not stop the others.
//!
//! Resume point: the round again; members that had answered are answered from disk, the others
//! are asked.

use super::super::events::Phase;
use super::super::run::{Job, Run};
use super::super::{EngineError, RunReport};
use super::one_pass::{finish_round, phase, start, with_pending};

pub(super) async fn run(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    let (prompt, pending) = with_pending(run, prompt);
    start(run);
    phase(run, Phase::Dispatch);
    let jobs = run
        .team
        .participants
        .iter()
        .map(|m| Job::plain(m.clone(), prompt.clone()))
        .collect();
    let finished = run.parallel(jobs, 1, None).await;
    phase(run, Phase::Collect);
    // Each answer under its member's name as people read it (its handle, else without the
    // team prefix every name carries).
    let slug = run.team.slug();
    let final_text = finished
        .iter()
        .map(|(r, _)| {
            let name = run
                .team
                .participants
                .iter()
                .find(|m| m.name == r.session)
                .map_or_else(
                    || crate::naming::strip_team_prefix(&r.session, &slug),
                    |m| m.shown.as_str(),
                );
            format!("## {name}\n\n{}", r.text_or_error().trim())
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    let results: Vec<_> = finished.iter().map(|(r, _)| r).collect();
    Ok(finish_round(run, final_text, pending, &results))
}
