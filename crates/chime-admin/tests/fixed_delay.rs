//! `FIX_DELAY` through the real admin and an XXL-JOB executor over HTTP, on SQLite, MariaDB and
//! PostgreSQL: each fire is the previous run's end (its result) plus the delay, to the
//! millisecond, so runs that take longer than the delay never overlap; a run that could not be
//! sent ends when it was triggered; while a run is under way the job has no known next fire;
//! workflows refuse the type.

mod common;

use common::{Db, Env};
use serde_json::{json, Value};
use std::time::Duration;

const APP: &str = "fixed-delay";
/// The delay, and how long each run takes: longer than the delay.
const DELAY_MS: i64 = 1_000;
const RUN_MS: i64 = 1_500;
/// `next_fire_at` while the run is under way.
const WAITING: i64 = 253_402_300_799_999;

/// The job's scheduled runs, oldest first.
fn scheduled(runs: &[Value]) -> Vec<&Value> {
    let mut s: Vec<&Value> = runs.iter().filter(|r| r["trigger_type"] == "CRON").collect();
    s.sort_by_key(|r| r["id"].as_i64());
    s
}

/// Every fire after the first is `end(previous) + DELAY_MS`, and was sent after that end.
fn assert_spaced(runs: &[&Value], end: impl Fn(&Value) -> i64) {
    for pair in runs.windows(2) {
        let (prev, next) = (pair[0], pair[1]);
        assert_eq!(
            next["scheduled_at"].as_i64().unwrap(),
            end(prev) + DELAY_MS,
            "the fire after run {} is its end plus the delay: {prev} then {next}",
            prev["id"]
        );
        assert!(
            next["triggered_at"].as_i64().unwrap() >= end(prev),
            "{prev} then {next}"
        );
    }
}

async fn scenario(kind: Db) {
    let (env, ex, _) = Env::with_executor(kind, Duration::from_secs(5), APP).await;

    // 1. Runs of 1.5 s, a delay of 1 s: one at a time, each fire 1 s after the last result.
    let job = env
        .job(json!({"group": APP, "handler": "sleep", "param": RUN_MS.to_string(),
                    "schedule_type": "FIX_DELAY", "schedule_expr": "1", "running": true}))
        .await;
    // While a run is under way the job waits for it, and shows no next fire.
    common::eventually(20, "the job waiting for its run", || async {
        let (_, j) = env.api.get(&format!("/v1/jobs/{job}")).await;
        if j["next_fire_at"] == WAITING {
            Ok(())
        } else {
            Err(j.to_string())
        }
    })
    .await;
    let (s, next) = env.api.get(&format!("/v1/jobs/{job}/next")).await;
    assert_eq!((s, next["next"].as_array().map(Vec::len)), (200, Some(0)), "{next}");
    let runs = env
        .api
        .wait_runs(job, 60, "four finished runs", |r| {
            scheduled(r).iter().filter(|r| r["status"] == "success").count() >= 4
        })
        .await;
    env.api.ok(&format!("/v1/jobs/{job}/stop"), json!({})).await;
    let done: Vec<&Value> = scheduled(&runs)
        .into_iter()
        .filter(|r| r["status"] == "success")
        .collect();
    assert_spaced(&done, |r| r["handled_at"].as_i64().unwrap());
    assert_eq!(ex.seen.lock().unwrap().slow_most, 1, "runs overlapped at the executor");

    // 2. Nowhere to send: each run fails when triggered, and the next follows that.
    env.group("fixed-delay-empty").await;
    let lonely = env
        .job(
            json!({"group": "fixed-delay-empty", "handler": "ok", "schedule_type": "FIX_DELAY",
                    "schedule_expr": "1", "running": true}),
        )
        .await;
    let runs = env
        .api
        .wait_runs(lonely, 30, "three failed sends", |r| {
            scheduled(r).len() >= 3 && r.iter().all(|r| r["status"] != "pending")
        })
        .await;
    env.api.ok(&format!("/v1/jobs/{lonely}/stop"), json!({})).await;
    let failed = scheduled(&runs);
    for r in &failed {
        assert_eq!(r["status"], "failed", "{r}");
    }
    // Its end is when it was triggered (or a result recorded for it, whichever is later).
    assert_spaced(&failed, |r| {
        r["triggered_at"]
            .as_i64()
            .unwrap()
            .max(r["handled_at"].as_i64().unwrap())
    });

    // 3. The next fire of a stopped job is a delay from now; workflows refuse the type.
    let (_, next) = env.api.get(&format!("/v1/jobs/{job}/next")).await;
    assert_eq!(next["next"].as_array().map(Vec::len), Some(1), "{next}");
    let (s, v) = env
        .api
        .post(
            "/v1/workflows",
            json!({"name": "delayed", "schedule_type": "FIX_DELAY", "schedule_expr": "5",
                   "definition": {"nodes": [{"key": "a", "job_id": job}], "edges": []}}),
        )
        .await;
    assert_eq!((s, v["field"].as_str()), (422, Some("schedule_type")), "{v}");

    ex.kill();
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_delay_sqlite() {
    scenario(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_delay_mysql() {
    scenario(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_delay_postgres() {
    scenario(Db::Postgres).await;
}
