//! One request per route and input shape through `Service::root` and
//! `Service::workday`, as the axum handlers call them (the raw query and
//! `SystemTime::now()`), for every GET case of
//! servers/_shared/microbench-cases.json. axum's routing and hyper's
//! response writing are not in it.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serverlab_axum_bench::{repo_root, request, route_cases, service, status};

fn contract(c: &mut Criterion) {
    let root = repo_root();
    let service = service(&root);
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
