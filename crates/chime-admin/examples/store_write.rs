//! Write-path benchmark of the store (docs/BENCHMARKS.md, "Scheduling center"): what one fire
//! costs the database, without HTTP.
//!
//! Defines JOBS fixed-rate jobs on a fresh SQLite file (or `--db URL`) and replays ROUNDS
//! seconds of their fires as fast as the store takes them, the way the admin writes them:
//! a claim (run rows inserted, `next_fire_at` advanced), then the trigger results in batches
//! of 5,000, then the run results (callbacks) in batches of 5,000. Prints the time of each
//! phase per fire, and the fires per second the store alone would sustain.
//!
//! `--together` records each chunk's trigger results and run results in one batch, as the
//! results writer does when both are waiting for it: a fast run is then written once.
//! `--no-checkpointer` leaves WAL checkpoints to the writing connection.
//! `--without-index NAME[,NAME…]` drops those indexes first, to measure what keeping them costs.
//!
//! cargo run --release -p chime-admin --example store_write -- --jobs 20000 --rounds 10

use chime_admin::model::{now_ms, GroupSpec, JobSpec};
use chime_admin::store::{FirePlan, HandleOutcome, NewRun, Store, TriggerOutcome, PARTITIONS};
use chime_protocol::TriggerType;
use std::time::{Duration, Instant};

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_owned())
}

/// A trigger report of the usual length (see `dispatch::trigger_msg`).
const REPORT: &str = "Trigger type：Cron<br>Admin：node-1<br>Executors：http://127.0.0.1:9999<br>\
Route strategy：First<br>Block strategy：Serial execution<br>Timeout：0<br>Retry count：0<br><br>\
>>>>>>>>>>>Trigger Job<<<<<<<<<<<<br>address：http://127.0.0.1:9999<br>code：200<br>msg：null";

#[tokio::main]
async fn main() {
    let jobs: usize = arg("--jobs", "20000").parse().expect("--jobs N");
    let rounds: usize = arg("--rounds", "10").parse().expect("--rounds N");
    let dir = tempfile::tempdir().unwrap();
    let url = arg("--db", &format!("sqlite://{}/store.db", dir.path().display()));
    let store = Store::connect(&url).await.expect("database");
    // What an index of the run table costs each fire: the same replay without it.
    let without = arg("--without-index", "");
    if !without.is_empty() {
        sqlx::any::install_default_drivers();
        let db = sqlx::AnyPool::connect(&url).await.expect("database");
        for index in without.split(',') {
            sqlx::query(&format!("DROP INDEX {index}"))
                .execute(&db)
                .await
                .expect("--without-index names an index of the schema");
        }
        db.close().await;
    }
    let group = store
        .insert_group(
            &GroupSpec {
                app_name: Some("bench".into()),
                addresses: Some(vec!["http://127.0.0.1:9999".into()]),
                ..Default::default()
            }
            .validate(None, &Default::default())
            .unwrap(),
        )
        .await
        .unwrap();
    let draft = JobSpec {
        group_id: Some(group.id),
        task: chime_admin::api::JobTaskPatch {
            handler: Some("noop".into()),
            ..Default::default()
        },
        schedule: chime_admin::api::SchedulePatch {
            schedule_type: Some("FIX_RATE".into()),
            schedule_expr: Some("1".into()),
            ..Default::default()
        },
        running: Some(true),
        ..Default::default()
    }
    .validate(None, "UTC", group.id)
    .unwrap();
    store.insert_jobs_bulk(&vec![draft; jobs], group.id).await.unwrap();
    let owner = "bench";
    let start_ms = now_ms();
    for lease in store.lease_table().await.unwrap().leases {
        store
            .acquire_lease(&lease, owner, start_ms, start_ms + 3_600_000, true)
            .await
            .unwrap();
    }
    let all: Vec<i64> = (0..PARTITIONS).collect();
    let together = std::env::args().any(|a| a == "--together");
    // The admin's checkpointer (`center::run_wal_checkpoints`), unless `--no-checkpointer`.
    if !std::env::args().any(|a| a == "--no-checkpointer") {
        let store = store.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let _ = store.checkpoint_wal().await;
            }
        });
    }
    let mut cache = Default::default();
    // Simulated time: round r claims the fires of second r. Real time only measures.
    let mut claim = Duration::ZERO;
    let mut trigger = Duration::ZERO;
    let mut handle = Duration::ZERO;
    let mut fires = 0usize;
    let mut sim = 0i64;
    let first = store
        .claim_due_fires(owner, &all, i64::MAX, 1, &mut cache, |j| FirePlan {
            runs: Vec::new(),
            next_fire_at: j.next_fire_at,
            last_fire_at: j.last_fire_at,
        })
        .await
        .unwrap();
    drop(first);
    let base = now_ms();
    for _ in 0..rounds {
        sim += 1000;
        let horizon = base + sim;
        let t = Instant::now();
        let mut tickets = Vec::new();
        loop {
            let claimed = store
                .claim_due_fires(owner, &all, horizon, 50_000, &mut cache, |j| {
                    let fire = j.next_fire_at.max(horizon - 1000);
                    FirePlan {
                        runs: vec![NewRun::of_job(j, TriggerType::Cron, fire, Some(fire))],
                        next_fire_at: fire + 1000,
                        last_fire_at: fire,
                    }
                })
                .await
                .unwrap();
            tickets.extend(claimed.jobs.into_iter().flat_map(|(_, t)| t));
            if !claimed.more {
                break;
            }
        }
        claim += t.elapsed();
        fires += tickets.len();
        let t = Instant::now();
        for chunk in tickets.chunks(5000) {
            let triggers: Vec<TriggerOutcome> = chunk
                .iter()
                .map(|t| TriggerOutcome {
                    run_id: t.id,
                    job_id: t.job_id,
                    triggered_at: now_ms(),
                    address: "http://127.0.0.1:9999".into(),
                    code: 200,
                    msg: REPORT.into(),
                    shard_total: 1,
                    trigger_type: TriggerType::Cron,
                })
                .collect();
            let handles: Vec<HandleOutcome> = chunk
                .iter()
                .map(|t| HandleOutcome {
                    run_id: t.id,
                    code: 200,
                    msg: None,
                    retry: true,
                    lost: false,
                })
                .collect();
            if together {
                // Both in one batch, as when the results writer is busy: one write per run.
                store.record_outcomes(&triggers, &handles).await.unwrap();
            } else {
                let t0 = Instant::now();
                store.record_outcomes(&triggers, &[]).await.unwrap();
                trigger += t0.elapsed();
                let t1 = Instant::now();
                store.record_outcomes(&[], &handles).await.unwrap();
                handle += t1.elapsed();
            }
        }
        if together {
            // Not split by phase: counted under "trigger", "result" stays 0.
            trigger += t.elapsed();
        }
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6 / fires.max(1) as f64;
    let total = claim + trigger + handle;
    println!(
        "jobs={jobs} fires={fires} claim_us_per_fire={:.1} trigger_us_per_fire={:.1} result_us_per_fire={:.1} \
         total_us_per_fire={:.1} store_only_fires_per_s={:.0}",
        us(claim),
        us(trigger),
        us(handle),
        us(total),
        fires as f64 / total.as_secs_f64()
    );
}
