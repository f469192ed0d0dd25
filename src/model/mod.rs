//! The domain model: plain serde types persisted as JSON (organization, transcripts) and YAML
//! (presets). No I/O lives here.

mod enums;
mod message;
mod organization;
mod preset;
pub mod reconcile;
mod reflection;

pub use enums::{GroupKind, MessageRole, Mode, ProviderKind, Role, Tier};
pub use message::{Message, Usage};
pub use organization::{
    Group, GroupId, MAX_ITERATIONS_RANGE, Organization, Session, SessionId, UiPrefs, default_max_iterations,
    max_iterations_in_range,
};
pub use preset::{Preset, PresetAgent, PresetWorker};
pub use reflection::{CycleOutcome, Evaluation, ReflectionCycle, Trend};
