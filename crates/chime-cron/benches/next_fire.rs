//! Next-fire-time throughput of chime-cron.
//!
//! `cargo bench -p chime-cron --bench next_fire` (results in docs/BENCHMARKS.md). Each
//! measurement walks a schedule forward (every call starts where the previous answer was), as
//! a scheduler does.

use chime_cron::batch::Batch;
use chime_cron::{CronExpr, Schedule};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

/// 2026-11-22T00:00:00Z.
const START_MS: i64 = 1_795_305_600_000;

fn walk(c: &mut Criterion, group: &str, cases: &[(&str, &str)]) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(1));
    for &(expr, zone) in cases {
        let schedule = Schedule::cron(expr, zone.parse().unwrap()).unwrap();
        g.bench_with_input(BenchmarkId::new(expr, zone), &schedule, |b, schedule| {
            let mut t = START_MS;
            b.iter(|| {
                t = schedule.next_after(black_box(t)).unwrap_or(START_MS);
                t
            })
        });
    }
    g.finish();
}

fn every_five_minutes(c: &mut Criterion) {
    walk(
        c,
        "next_fire",
        &[
            ("0 */5 * * * ?", "UTC"),
            ("0 */5 * * * ?", "Asia/Shanghai"),
            ("0 */5 * * * ?", "America/New_York"),
        ],
    );
}

fn special_days(c: &mut Criterion) {
    walk(
        c,
        "next_fire_special",
        &[
            ("0 0 12 LW * ?", "America/New_York"),
            ("0 0 9 ? * 6#3", "America/New_York"),
            ("0 30 1 L * ?", "America/New_York"),
            ("0 0 9 ? * MON-FRI", "Europe/London"),
        ],
    );
}

fn parse(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Elements(1));
    g.bench_function("0 0/5 9-17 ? * MON-FRI", |b| {
        b.iter(|| CronExpr::parse(black_box("0 0/5 9-17 ? * MON-FRI")).unwrap())
    });
    g.finish();
}

/// Lines of the `--batch` protocol: 20 expressions × 5 zones × 10 start instants, 10 fire
/// times each.
fn batch_lines() -> Vec<String> {
    let exprs = [
        "0 */5 * * * ?",
        "0 0 12 LW * ?",
        "0 0 9 ? * 6#3",
        "0 30 1 L * ?",
        "0 0/15 9-17 ? * MON-FRI",
        "0 0 0 1 * ?",
        "*/10 * * * * ?",
        "0 0 2 * * ?",
        "0 0 12 15W * ?",
        "0 0 8 ? * 2L",
        "0 30 6 ? JAN-MAR SAT",
        "0 0 0 29 2 ?",
        "0 15,45 * * * ?",
        "0 0 22-2 * * ?",
        "0 0 12 L-3 * ?",
        "0 0 0 ? * SUN",
        "0 0 6 1,15 * ?",
        "0 0 0 1 1 ? 2027-2030",
        "0 5-50/10 * * * ?",
        "0 0 * * * ?",
    ];
    let zones = [
        "UTC",
        "America/New_York",
        "Europe/London",
        "Asia/Shanghai",
        "Australia/Lord_Howe",
    ];
    let mut lines = Vec::new();
    for e in exprs {
        for z in zones {
            for k in 0..10 {
                lines.push(format!("{e}\t{z}\t{}\t10", START_MS + k * 7_777_777_000));
            }
        }
    }
    lines
}

fn batch(c: &mut Criterion) {
    let lines = batch_lines();
    let mut g = c.benchmark_group("batch");
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.bench_function("answer_into (10 times per line)", |b| {
        let mut batch = Batch::new();
        let mut out = String::with_capacity(256);
        b.iter(|| {
            for line in &lines {
                out.clear();
                batch.answer_into(line, &mut out);
                black_box(&out);
            }
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = every_five_minutes, special_days, parse, batch
}
criterion_main!(benches);
