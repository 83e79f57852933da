//! The inputs of the contract's microbenchmark (benches/contract.rs) and of
//! its instruction counter (src/bin/countsteps.rs): the GET cases of
//! servers/_shared/microbench-cases.json on "/" and "/workday", answered
//! through `Service::root` and `Service::workday` as the axum handlers call
//! them (the raw query and `SystemTime::now()`).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serverlab_axum::contract::{Answer, Calendar, Service};

/// One case of the shared file: `query` is the raw query string, as sent.
pub struct BenchCase {
    pub name: String,
    pub path: String,
    pub query: String,
    pub status: u16,
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// The Service over the shared calendar, as the stack builds it.
pub fn service(root: &Path) -> Service {
    let calendar_file = root.join("contracts/calendar/xshg-non-trading-weekdays.txt");
    let calendar = Calendar::load(calendar_file.to_str().expect("a UTF-8 path")).expect("calendar");
    Service::new("Rust axum", calendar)
}

/// servers/_shared/microbench-cases.json, parsed.
fn cases_file(root: &Path) -> serde_json::Value {
    let file = root.join("servers/_shared/microbench-cases.json");
    let text = std::fs::read_to_string(&file).expect("microbench-cases.json");
    serde_json::from_str(&text).expect("valid JSON")
}

/// The cases this library answers: GET on "/" and "/workday" (routing,
/// 404, 405 and HEAD are axum's).
pub fn route_cases(root: &Path) -> Vec<BenchCase> {
    let parsed = cases_file(root);
    let field = |case: &serde_json::Value, key: &str| case[key].as_str().unwrap_or("").to_owned();
    parsed["cases"]
        .as_array()
        .expect("a cases list")
        .iter()
        .filter(|case| {
            let path = case["path"].as_str();
            case["method"] == "GET" && (path == Some("/") || path == Some("/workday"))
        })
        .map(|case| BenchCase {
            name: field(case, "name"),
            path: field(case, "path"),
            query: field(case, "query"),
            status: case["status"].as_u64().expect("a status") as u16,
        })
        .collect()
}

/// The instant of the file's `held_at_ms`, the one the instruction counter
/// hands the library as the time of every request.
pub fn held_at(root: &Path) -> SystemTime {
    let millis = cases_file(root)["held_at_ms"]
        .as_u64()
        .expect("a held_at_ms");
    UNIX_EPOCH + Duration::from_millis(millis)
}

pub fn status(answer: &Answer) -> u16 {
    match answer {
        Answer::Ok(_) | Answer::OkStatic(_) => 200,
        Answer::BadRequest(_) => 400,
    }
}

/// The answer to one request of `case`; axum gives the handler `None` for no query.
pub fn request(service: &Service, case: &BenchCase) -> Answer {
    request_at(service, case, SystemTime::now())
}

/// The same, at the instant `now`.
pub fn request_at(service: &Service, case: &BenchCase, now: SystemTime) -> Answer {
    let query = Some(case.query.as_str()).filter(|q| !q.is_empty());
    if case.path == "/workday" {
        service.workday(query, now)
    } else {
        service.root(query, now)
    }
}
