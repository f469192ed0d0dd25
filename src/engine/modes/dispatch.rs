//! Mode `dispatch` (placeholder while it is written).
use super::super::run::Run;
use super::super::{EngineError, RunReport};
pub(super) async fn run(_run: &mut Run<'_>, _prompt: String) -> Result<RunReport, EngineError> {
    Err(EngineError::NoSuchGroup("dispatch".into()))
}
