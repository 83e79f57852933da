//! Start-up and the connection layer: configuration from the environment,
//! the tokio runtime, the listening socket and hyper's HTTP/1.1 connections.
//!
//! axum's own `axum::serve` is deliberately simple and takes no options (its
//! documentation points to hyper and hyper-util for configuration): no
//! header-read timeout, the 128 backlog of `TcpListener::bind`. This is the
//! same accept loop with the settings a production server needs; the
//! router is axum's either way.

use std::future::Future;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpSocket};

use crate::app::{DISPLAY_NAME, router};
use crate::contract::{CALENDAR_ENV, Calendar, Service};

/// The framework and version in the start-up line; a test checks it
/// against Cargo.lock and server.toml.
pub const FRAMEWORK: &str = "axum 0.8.9";

/// Time a client has to send a complete request head, counted from the
/// moment hyper starts waiting for it: when the connection opens and again
/// after every response. It therefore also closes keep-alive connections
/// idle for that long. 30 s is hyper's own default once a timer is set.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a graceful shutdown waits for in-flight requests.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The listen backlog asked for; Linux caps it at net.core.somaxconn, so the
/// effective backlog is the host's setting (what Go's net package uses).
pub const BACKLOG: u32 = 65_535;

/// Configuration from PORT, HOST, WORKERS and WORKDAY_CALENDAR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub host: String,
    pub port: u16,
    /// tokio worker threads.
    pub workers: usize,
    /// Where `workers` came from, for the start-up line.
    pub workers_from: &'static str,
    pub calendar_path: String,
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let port = lookup("PORT")
            .filter(|p| !p.is_empty())
            .ok_or("PORT is not set")?;
        let port = match port.parse::<u16>() {
            Ok(p) if p >= 1 && port.bytes().all(|c| c.is_ascii_digit()) => p,
            _ => return Err(format!("PORT={port:?} is not a port number (1..65535)")),
        };
        let host = lookup("HOST")
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "0.0.0.0".into());
        let (workers, workers_from) = match lookup("WORKERS").filter(|w| !w.is_empty()) {
            Some(w) => match w.parse::<usize>() {
                Ok(n) if n >= 1 && w.bytes().all(|c| c.is_ascii_digit()) => (n, "WORKERS"),
                _ => return Err(format!("WORKERS={w:?} is not a positive integer")),
            },
            None => (available_cpus(), "available_parallelism"),
        };
        let calendar_path = lookup(CALENDAR_ENV)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| format!("{CALENDAR_ENV} is not set (path of the calendar file)"))?;
        Ok(Config {
            host,
            port,
            workers,
            workers_from,
            calendar_path,
        })
    }
}

/// The CPUs this process may use: `std::thread::available_parallelism`,
/// which on Linux takes the affinity mask (sched_getaffinity: taskset,
/// cpusets, docker --cpuset-cpus) and the cgroup v1/v2 CPU quota (docker
/// --cpus), whichever is smaller; a fractional quota is rounded down, to at
/// least 1. tokio's own default worker count is the same function.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Binds the listening socket: SO_REUSEADDR (a restart need not wait for
/// TIME_WAIT sockets, as std and mio do too) and a backlog of BACKLOG.
pub fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Serves `app` on `listener` until `shutdown` completes, then shuts down
/// gracefully: stop accepting, close idle connections, let requests in
/// flight finish for up to SHUTDOWN_GRACE. The tests serve through this too.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let mut http = http1::Builder::new();
    // A timer makes hyper enforce the header-read timeout (slowloris):
    // without one, as in axum::serve, a client may hold a connection
    // forever by sending nothing or one byte at a time.
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    // Persistent connections and pipelined requests: hyper's defaults.
    http.keep_alive(true);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(err) if is_connection_error(&err) => continue,
                Err(err) => {
                    // EMFILE and the like: wait instead of spinning, as axum::serve does.
                    eprintln!("{DISPLAY_NAME}: accept error: {err}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Responses go out as soon as they are written (Nagle's algorithm
        // would hold back the tail of a response until the previous segment
        // is acknowledged); Go and nginx do the same for keep-alive.
        let _ = stream.set_nodelay(true);
        // One task per connection; hyper parses, axum routes. Errors
        // (client resets, header timeouts, malformed requests already
        // answered with 400) end the connection and are not logged: no
        // per-request output.
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!("{DISPLAY_NAME}: connections still busy after {SHUTDOWN_GRACE:?}; closing them");
    }
    Ok(())
}

/// Errors of one connection that has gone away before accept returned it.
fn is_connection_error(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Completes at the first SIGTERM or SIGINT.
async fn terminate() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// The whole process: configuration, calendar, runtime, serve. Errors end
/// it with status 1 and one line on stderr (main.rs).
pub fn run() -> Result<(), String> {
    let config = Config::from_env()?;
    let calendar = Calendar::load(&config.calendar_path)?;
    let addr = (config.host.as_str(), config.port)
        .to_socket_addrs()
        .map_err(|e| format!("HOST={:?}: {e}", config.host))?
        .next()
        .ok_or_else(|| format!("HOST={:?} resolves to no address", config.host))?;

    // The multi-threaded scheduler with one worker thread per CPU the
    // process may use (or WORKERS); connections are tasks spread over them
    // by work stealing. enable_all: the IO driver and the timer (hyper's
    // header-read timeout, the shutdown grace period).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.workers)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;

    runtime.block_on(async {
        let listener = listen(addr).map_err(|e| format!("listen on {addr}: {e}"))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        eprintln!(
            "{DISPLAY_NAME} ({FRAMEWORK}) listening on {local} ({} tokio worker threads from {}; \
             {} non-trading weekdays {}..{})",
            config.workers,
            config.workers_from,
            calendar.len(),
            calendar.first,
            calendar.last,
        );
        let app = router(Arc::new(Service::new(DISPLAY_NAME, calendar)));
        // A second signal during the grace period ends the process at once.
        let shutdown = async {
            terminate().await;
            tokio::spawn(async {
                terminate().await;
                std::process::exit(1);
            });
        };
        serve(listener, app, shutdown)
            .await
            .map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, String> {
        let env: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| env.get(name).cloned())
    }

    #[test]
    fn config_from_env() {
        let c = config(&[("PORT", "8171"), ("WORKDAY_CALENDAR", "/c.txt")]).unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.workers),
            ("0.0.0.0", 8171, available_cpus())
        );
        let c = config(&[
            ("PORT", "8171"),
            ("HOST", "127.0.0.1"),
            ("WORKERS", "3"),
            ("WORKDAY_CALENDAR", "/c"),
        ])
        .unwrap();
        assert_eq!(
            (c.host.as_str(), c.workers, c.workers_from),
            ("127.0.0.1", 3, "WORKERS")
        );
        for (vars, want) in [
            (&[("WORKDAY_CALENDAR", "/c")][..], "PORT is not set"),
            (
                &[("PORT", "0"), ("WORKDAY_CALENDAR", "/c")][..],
                "not a port number",
            ),
            (
                &[("PORT", "+80"), ("WORKDAY_CALENDAR", "/c")][..],
                "not a port number",
            ),
            (
                &[("PORT", "80"), ("WORKERS", "0"), ("WORKDAY_CALENDAR", "/c")][..],
                "not a positive integer",
            ),
            (
                &[
                    ("PORT", "80"),
                    ("WORKERS", "two"),
                    ("WORKDAY_CALENDAR", "/c"),
                ][..],
                "not a positive integer",
            ),
            (&[("PORT", "80")][..], "WORKDAY_CALENDAR is not set"),
        ] {
            let err = config(vars).unwrap_err();
            assert!(err.contains(want), "{vars:?}: {err}");
        }
    }

    #[test]
    fn calendar_errors_name_the_variable() {
        let err = Calendar::load("/nonexistent/calendar.txt").unwrap_err();
        assert!(
            err.starts_with("WORKDAY_CALENDAR=/nonexistent/calendar.txt: cannot read"),
            "{err}"
        );
    }
}
