//! Rust axum: `PORT`, `HOST`, `WORKERS` and `WORKDAY_CALENDAR` from the
//! environment (server.toml, README.md); stops cleanly on SIGTERM and SIGINT.

use std::process::ExitCode;

fn main() -> ExitCode {
    match serverlab_axum::server::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("axum: {err}");
            ExitCode::FAILURE
        }
    }
}
