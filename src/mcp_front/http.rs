//! `huddle mcp --http ADDR`: the same server over streamable HTTP, on a loopback address only.
//! Stateful sessions (one handler per session, as over stdio), so progress notifications and
//! elicitation work as they do there. rmcp checks `Host` (loopback names only, against DNS
//! rebinding) and `Origin` (absent, or a loopback origin on any port; else 403); huddle checks
//! that the caller is its own user (the uid owning the client's end of the connection).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::McpFront;
use crate::cli::note;
use crate::config::Paths;

/// The `Host` names a request may carry (any port).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The browser origins a request may come from (any port); a request without `Origin` passes.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// `ADDR` as a socket address, if it is a loopback one.
fn loopback_addr(addr: &str) -> Result<SocketAddr, String> {
    // `localhost:PORT`, as people write it for clients, is 127.0.0.1 here.
    let numeric = match addr.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => addr.to_string(),
    };
    let parsed: SocketAddr = numeric
        .parse()
        .map_err(|_| format!("`{addr}` is not an address such as 127.0.0.1:8080 or [::1]:0"))?;
    if !parsed.ip().is_loopback() {
        return Err(format!(
            "`{addr}` is not a loopback address: huddle mcp serves HTTP on 127.0.0.1 or [::1] only"
        ));
    }
    Ok(parsed)
}

/// Serves until Ctrl-C or SIGTERM: 0, or 2 for an address that is not loopback, 1 if it cannot
/// bind. The bound URL goes to stderr. Runs it started go on in the host.
pub async fn serve_http(paths: &Paths, repo: PathBuf, addr: &str) -> u8 {
    let addr = match loopback_addr(addr) {
        Ok(a) => a,
        Err(e) => {
            note(format_args!("huddle mcp: {e}"));
            return 2;
        }
    };
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            note(format_args!("huddle mcp: cannot listen on {addr}: {e}"));
            return 1;
        }
    };
    let bound = listener.local_addr().unwrap_or(addr);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(LOOPBACK_HOSTS)
        .with_allowed_origins(LOOPBACK_ORIGINS)
        .enforce_origin_validation();
    let cancel = config.cancellation_token.clone();
    // Stopping lets go of the calls that follow runs (the runs go on in the host).
    let front = McpFront::new(paths, repo, cancel.clone());
    let tasks = front.tasks.clone();
    let service = StreamableHttpService::new(move || Ok(front.clone()), Arc::new(session_manager()), config);
    note(format_args!("huddle mcp: serving http://{bound}/mcp"));
    let stop = crate::host::stop_signal();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, client) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "huddle mcp: accept failed");
                        continue;
                    }
                };
                let hyper_service = TowerToHyperService::new(service.clone());
                tokio::spawn(async move {
                    // The kernel's socket table is read off the accept loop and off the
                    // runtime's workers: it can be large on a busy machine.
                    let server = stream.local_addr();
                    let allowed = tokio::task::spawn_blocking(move || own_user_calls(server, client))
                        .await
                        .unwrap_or(Err("huddle mcp could not check which user is calling"));
                    if let Err(why) = allowed {
                        tracing::warn!(%client, why, "huddle mcp: refused an HTTP connection");
                        refuse(stream, why).await;
                        return;
                    }
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), hyper_service);
                    if let Err(e) = connection.await {
                        tracing::debug!(error = %e, "huddle mcp: an HTTP connection ended");
                    }
                });
            }
            signal = &mut stop => {
                tracing::info!(signal, "huddle mcp (HTTP) stops");
                break;
            }
        }
    }
    cancel.cancel();
    tasks.shutdown();
    0
}

/// The sessions: one ends once idle for the keep-alive (`HUDDLE_MCP_KEEP_ALIVE_MS`, default
/// rmcp's 5 minutes), a client that went without `DELETE`. A blocking call keeps its session
/// busy with heartbeats (progress, or a `ping` without a progress token), so no answer is cut
/// off however long its run.
fn session_manager() -> LocalSessionManager {
    let mut sessions = LocalSessionManager::default();
    if let Some(ms) = std::env::var(KEEP_ALIVE_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
    {
        sessions.session_config.keep_alive = Some(std::time::Duration::from_millis(ms));
    }
    sessions
}

/// The variable that sets how long an idle HTTP session is kept, in milliseconds.
pub const KEEP_ALIVE_VAR: &str = "HUDDLE_MCP_KEEP_ALIVE_MS";

/// Ok if the connection's client end belongs to this process's user (as the host's socket
/// checks its peer's uid); else why not. Where the owner cannot be told, nobody is served.
fn own_user_calls(server: std::io::Result<SocketAddr>, client: SocketAddr) -> Result<(), &'static str> {
    let server = server.map_err(|_| "cannot tell which address was called")?;
    match super::peer_uid::uid_of_client(client, server) {
        Some(uid) if crate::host::server::same_user(uid) => Ok(()),
        Some(_) => Err("huddle mcp serves only the user who started it"),
        None => Err("huddle mcp cannot tell which user is calling, so it serves nobody"),
    }
}

/// Answers a refused connection with a 403 that says why, then closes it.
async fn refuse(mut stream: tokio::net::TcpStream, why: &'static str) {
    use tokio::io::AsyncWriteExt;
    let body = format!("{why}\n");
    let response = format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_served() {
        assert!(loopback_addr("127.0.0.1:0").is_ok());
        assert!(loopback_addr("[::1]:8080").is_ok());
        let wide = loopback_addr("0.0.0.0:0").unwrap_err();
        assert!(wide.contains("not a loopback address"), "{wide}");
        assert!(loopback_addr("192.168.1.2:80").is_err());
        assert!(loopback_addr("localhost").is_err());
        assert_eq!(
            loopback_addr("localhost:8080"),
            Ok("127.0.0.1:8080".parse().expect("an address"))
        );
    }
}
