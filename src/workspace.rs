//! What both front ends open before they start: the data-dir lock, the organization (loaded,
//! recovered and reconciled, then saved in the background) and an engine over the configured
//! providers. The TUI and `huddle run` differ only in how they show the engine's events.

use tokio::sync::mpsc::UnboundedReceiver;

use crate::config::{Config, Paths};
use crate::engine::events::EngineEvent;
use crate::engine::{Engine, EngineOptions, EventSink};
use crate::providers::{ProviderError, Providers};
use crate::store::{DataDirLock, OrgHandle, OrganizationFile, StoreError, StoreNotice, Transcripts};

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

pub struct Workspace {
    pub org: OrgHandle,
    pub engine: Engine,
    /// The engine's events, for the one front end that shows them.
    pub events: UnboundedReceiver<EngineEvent>,
    /// What loading the organization had to repair or recover; the user is told.
    pub notices: Vec<StoreNotice>,
    /// Held for as long as the workspace is open.
    pub lock: DataDirLock,
}

impl Workspace {
    /// Takes the lock (a second instance gets "already running (pid N)"), loads the
    /// organization and starts the engine.
    pub fn open(paths: &Paths, config: &Config) -> Result<Workspace, OpenError> {
        let lock = DataDirLock::acquire(&paths.lock_file())?;
        let loaded = OrganizationFile::new(paths.organization_file()).load()?;
        let providers = Providers::from_config(config)?;
        let org = OrgHandle::persistent(loaded.org, OrganizationFile::new(paths.organization_file()));
        let (sink, events) = EventSink::channel();
        let engine = Engine::new(
            providers,
            org.clone(),
            Transcripts::new(paths.sessions_dir()),
            sink,
            EngineOptions {
                max_concurrency: config.max_concurrency,
                ..EngineOptions::default()
            },
        );
        Ok(Workspace {
            org,
            engine,
            events,
            notices: loaded.notices,
            lock,
        })
    }
}
