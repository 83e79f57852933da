//! What scripts/count_instructions.py runs under valgrind's callgrind to
//! count the instructions of one request per route and input shape: for
//! each case it calls `serverlab_step_marker` before each of three steps (N
//! requests of warm-up, no request, N requests) and prints the case's name.
//! callgrind dumps its counters on entering the marker, so
//! (N requests - none) / N is one request's instructions, the loop's set-up
//! cancelled out.
//!
//! The clock is read on every request, as the handlers do, but the library
//! is handed one instant, the same on every day: `held_at_ms` in
//! microbench-cases.json, read once at start. The cost of formatting a time
//! depends on its digits, so a live clock would make hello's count move with
//! the hour it is taken at.
//!
//!     countsteps [--calls N] [case ...]

use std::hint::black_box;
use std::time::SystemTime;

use serverlab_axum_bench::{held_at, repo_root, request, request_at, route_cases, service, status};

/// The function callgrind dumps before (--dump-before=serverlab_step_marker).
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn serverlab_step_marker() {
    black_box(());
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut calls = 2000;
    if args.first().map(String::as_str) == Some("--calls") {
        calls = args.get(1).and_then(|n| n.parse().ok()).expect("--calls N");
        args.drain(..2);
    }
    let root = repo_root();
    let held = held_at(&root);
    let service = service(&root);
    for case in route_cases(&root) {
        if !args.is_empty() && !args.contains(&case.name) {
            continue;
        }
        let got = status(&request(&service, &case));
        assert_eq!(got, case.status, "{}: status", case.name);
        for n in [calls, 0, calls] {
            serverlab_step_marker();
            for _ in 0..n {
                black_box(SystemTime::now());
                black_box(request_at(&service, black_box(&case), held));
            }
        }
        println!("{}", case.name);
    }
    serverlab_step_marker();
}
