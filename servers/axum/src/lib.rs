//! The serverlab contract (contracts/README.md) on axum, hyper and tokio.
//!
//! - `contract`: the rules without HTTP (parsing, workday, hello text);
//! - `app`: axum's Router and the handlers;
//! - `server`: configuration, the tokio runtime and hyper's connections.

pub mod app;
pub mod contract;
pub mod server;
