//! The open huddle's side: listens on the data dir's socket and runs what `huddle run` hands it
//! on its own engine, streaming the output back.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};

use crate::cli::{OutputLine, RunOutput};
use crate::config::{Config, Paths};
use crate::engine::Engine;
use crate::headless::{self, Front, Host, RunRequest};
use crate::workspace::Edits;

use super::protocol::{self, ClientMessage, PROTOCOL, ServerMessage, read_line};

/// How long a connection may take to say what it wants.
const FIRST_LINE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("{0} exists and is not a socket; huddle leaves it alone (runs are not handed over)")]
    NotASocket(PathBuf),
    #[error("another process listens on {0}")]
    InUse(PathBuf),
    #[error("cannot listen on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What runs are driven with: the open huddle's workspace.
struct Context {
    paths: Paths,
    config: Config,
    edits: Edits,
    engine: Engine,
    /// The repository the open huddle works in.
    repo: PathBuf,
}

/// Listening; the socket file goes when this is dropped.
pub struct RunServer {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RunServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Starts listening on `paths.run_socket()` (inside a tokio runtime). A socket file left by a
/// huddle that crashed is replaced; anything else at that path is left alone and reported.
pub fn listen(
    paths: &Paths,
    config: Config,
    edits: Edits,
    engine: Engine,
    repo: PathBuf,
) -> Result<RunServer, ListenError> {
    let path = paths.run_socket();
    let listener = bind(&path)?;
    let context = Arc::new(Context {
        paths: paths.clone(),
        config,
        edits,
        engine,
        repo,
    });
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    tokio::spawn(serve(stream, Arc::clone(&context)));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "run socket: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    tracing::info!(path = %path.display(), "listening for runs handed over by `huddle run`");
    Ok(RunServer { path, task })
}

fn bind(path: &Path) -> Result<UnixListener, ListenError> {
    let io_error = |source| ListenError::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => return Err(ListenError::NotASocket(path.to_path_buf())),
        Ok(_) => {
            // We hold the data dir's lock, so a listener there would be a stranger; a dead one
            // is a crashed huddle's leftover.
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(ListenError::InUse(path.to_path_buf()));
            }
            std::fs::remove_file(path).map_err(io_error)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(e)),
    }
    let listener = UnixListener::bind(path).map_err(io_error)?;
    // The data dir is owner-only already; the socket is too.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io_error)?;
    Ok(listener)
}

async fn send(writer: &mut tokio::net::unix::OwnedWriteHalf, message: &ServerMessage) -> io::Result<()> {
    writer.write_all(protocol::encode(message).as_bytes()).await
}

/// Why a handed-over request is not taken here, if it is not.
fn refusal(
    context: &Context,
    protocol_version: u32,
    version: &str,
    request: &RunRequest,
) -> Option<ServerMessage> {
    if protocol_version != PROTOCOL {
        return Some(ServerMessage::Refused {
            code: 1,
            message: format!(
                "the huddle open on this data dir (version {}) cannot take runs from this one (version {version}): quit it, or run this with the same version",
                env!("CARGO_PKG_VERSION")
            ),
        });
    }
    // A team that runs here already is not run again, resumed or discarded: said before the
    // run is accepted.
    if let Some(name) = &request.group {
        let running = context
            .engine
            .org()
            .read(|o| o.group_by_name(name).map(|g| (g.id.clone(), g.name.clone())));
        if let Some((id, name)) = running
            && context
                .engine
                .is_running(&crate::engine::events::RunKey::team(&id))
        {
            return Some(ServerMessage::Refused {
                code: 1,
                message: crate::headless::running_message(&name),
            });
        }
    }
    // A new team or session works in the open huddle's repository: a run meant for another
    // one must not land there. An existing group keeps its own.
    if request.group.is_none() && !same_dir(&request.repo, &context.repo) {
        return Some(ServerMessage::Refused {
            code: 2,
            message: format!(
                "huddle is open on this data dir in {}, not {}: run this from there, use --group, or quit it first",
                context.repo.display(),
                request.repo.display()
            ),
        });
    }
    None
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// One `huddle run`: its request, then its run's output and exit code.
async fn serve(stream: UnixStream, context: Arc<Context>) {
    // The socket is owner-only; a peer of another user is refused all the same.
    let own_uid = own_uid();
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == own_uid => {}
        Ok(cred) => {
            tracing::warn!(uid = cred.uid(), "run socket: refused a peer of another user");
            return;
        }
        Err(e) => {
            tracing::warn!(error = %e, "run socket: cannot tell who connected");
            return;
        }
    }
    let (read, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read);
    let first = match tokio::time::timeout(FIRST_LINE_TIMEOUT, read_line(&mut reader)).await {
        Ok(Ok(Some(line))) => line,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "run socket: unreadable request");
            return;
        }
        Err(_) => {
            tracing::warn!("run socket: no request within {FIRST_LINE_TIMEOUT:?}");
            return;
        }
    };
    let (protocol_version, version, request) = match protocol::decode::<ClientMessage>(&first) {
        Ok(ClientMessage::Run {
            protocol,
            version,
            request,
        }) => (protocol, version, request),
        Ok(ClientMessage::Stop { .. }) | Err(_) => {
            let _ = send(
                &mut writer,
                &ServerMessage::Refused {
                    code: 1,
                    message: "the open huddle did not understand the request".into(),
                },
            )
            .await;
            return;
        }
    };
    if let Some(refused) = refusal(&context, protocol_version, &version, &request) {
        let _ = send(&mut writer, &refused).await;
        return;
    }
    if send(
        &mut writer,
        &ServerMessage::Accepted {
            pid: std::process::id(),
        },
    )
    .await
    .is_err()
    {
        return;
    }
    tracing::info!(preset = ?request.preset, group = ?request.group, "running a run handed over by `huddle run`");

    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<OutputLine>();
    let (stop_tx, stop_rx) = oneshot::channel::<u8>();
    let run_context = Arc::clone(&context);
    let mut run = tokio::spawn(async move {
        let context = run_context;
        let host = Host {
            paths: &context.paths,
            config: &context.config,
            edits: &context.edits,
            engine: &context.engine,
        };
        let front = Front::Remote {
            output: RunOutput::Remote(out_tx),
            stop: stop_rx,
        };
        headless::execute(&host, &request, front).await
    });
    // A stop from `huddle run`, or its going away, stops the run (dropping `stop_tx`).
    let listener = tokio::spawn(async move {
        loop {
            match read_line(&mut reader).await {
                Ok(Some(line)) => {
                    if let Ok(ClientMessage::Stop { signal }) = protocol::decode::<ClientMessage>(&line) {
                        let _ = stop_tx.send(signal);
                        // Keep reading until it goes: nothing more to do with what it sends.
                        while let Ok(Some(_)) = read_line(&mut reader).await {}
                        return;
                    }
                }
                Ok(None) | Err(_) => return,
            }
        }
    });
    let mut reader_gone = false;
    let result = loop {
        tokio::select! {
            Some(line) = out_rx.recv() => {
                if !reader_gone && send(&mut writer, &line.into()).await.is_err() {
                    reader_gone = true;
                }
            }
            result = &mut run => break result,
        }
    };
    while let Ok(line) = out_rx.try_recv() {
        if !reader_gone && send(&mut writer, &line.into()).await.is_err() {
            reader_gone = true;
        }
    }
    let code = match result {
        Ok(Ok(code)) => code,
        Ok(Err(failure)) => {
            let _ = send(
                &mut writer,
                &ServerMessage::Err {
                    text: format!("huddle: {failure}"),
                },
            )
            .await;
            failure.code
        }
        Err(e) => {
            tracing::error!(error = %e, "a handed-over run ended abnormally");
            let _ = send(
                &mut writer,
                &ServerMessage::Err {
                    text: "huddle: the run ended abnormally in the open huddle (see its log)".into(),
                },
            )
            .await;
            1
        }
    };
    let _ = send(&mut writer, &ServerMessage::Exit { code }).await;
    let _ = writer.shutdown().await;
    listener.abort();
}

fn own_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}
