//! One request per route and input shape through `Service::root` and
//! `Service::workday`, as the axum handlers call them (the raw query and
//! `SystemTime::now()`), for every GET case of
//! servers/_shared/microbench-cases.json. axum's routing and hyper's
//! response writing are not in it.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use serverlab_axum::contract::{Answer, Calendar, Service};

/// One case of the shared file: `query` is the raw query string, as sent.
struct BenchCase {
    name: String,
    path: String,
    query: String,
    status: u16,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// The cases this library answers: GET on "/" and "/workday" (routing,
/// 404, 405 and HEAD are axum's).
fn route_cases(root: &Path) -> Vec<BenchCase> {
    let file = root.join("servers/_shared/microbench-cases.json");
    let text = std::fs::read_to_string(&file).expect("microbench-cases.json");
    let parsed: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
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

fn status(answer: &Answer) -> u16 {
    match answer {
        Answer::Ok(_) | Answer::OkStatic(_) => 200,
        Answer::BadRequest(_) => 400,
    }
}

/// The answer to one request of `case`; axum gives the handler `None` for no query.
fn request(service: &Service, case: &BenchCase) -> Answer {
    let query = Some(case.query.as_str()).filter(|q| !q.is_empty());
    if case.path == "/workday" {
        service.workday(query, SystemTime::now())
    } else {
        service.root(query, SystemTime::now())
    }
}

fn contract(c: &mut Criterion) {
    let root = repo_root();
    let calendar_file = root.join("contracts/calendar/xshg-non-trading-weekdays.txt");
    let calendar = Calendar::load(calendar_file.to_str().expect("a UTF-8 path")).expect("calendar");
    let service = Service::new("Rust axum", calendar);
    let mut group = c.benchmark_group("contract");
    for case in route_cases(&root) {
        let got = status(&request(&service, &case));
        assert_eq!(got, case.status, "{}: status", case.name);
        group.bench_function(case.name.as_str(), |b| {
            b.iter(|| request(&service, black_box(&case)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    // Short enough for every case in well under two minutes on a busy machine.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    targets = contract
}
criterion_main!(benches);
