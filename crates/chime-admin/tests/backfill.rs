//! Backfills through the REST API on SQLite, MariaDB and PostgreSQL, at a real executor over
//! HTTP: a daily job backfilled over 30 days, 3 at once, runs each fire time exactly once with
//! its date parameter resolved to that day, never more than 3 at once; a second backfill over
//! an overlapping range runs only the days not backfilled before, newest first; a cancelled one
//! starts nothing more and lets its fire times not started go; bad requests are refused with
//! the field that is wrong. A daily workflow backfilled over 6 days, 2 at once, makes one
//! instance per day whose nodes run with that day's parameters, never more than 2 at once.

mod common;

use chrono::{TimeZone, Utc};
use common::executor::TestExecutor;
use common::{eventually, Db, Env};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

const APP: &str = "backfill";
const DAY: i64 = 24 * 3600 * 1000;

/// Epoch ms of `y-m-d h:00` UTC.
fn utc(y: i32, m: u32, d: u32, h: u32) -> i64 {
    Utc.with_ymd_and_hms(y, m, d, h, 0, 0).unwrap().timestamp_millis()
}

/// The days (`yyyy-MM-dd`) from `first` on, `n` of them.
fn days(first: i64, n: i64) -> Vec<String> {
    (0..n)
        .map(|k| {
            Utc.timestamp_millis_opt(first + k * DAY)
                .unwrap()
                .format("%Y-%m-%d")
                .to_string()
        })
        .collect()
}

/// Starts a backfill of `job`; answers it.
async fn backfill(env: &Env, job: i64, body: Value) -> Value {
    let (s, v) = env.api.post(&format!("/v1/jobs/{job}/backfills"), body).await;
    assert_eq!(s, 201, "{v}");
    v
}

/// Backfill `id` of `job` once it has ended.
async fn ended(env: &Env, job: i64, id: i64) -> Value {
    eventually(120, &format!("backfill {id} done"), || async {
        let (s, v) = env.api.get(&format!("/v1/jobs/{job}/backfills/{id}")).await;
        assert_eq!(s, 200, "{v}");
        if v["state"] != "running" {
            Ok(v)
        } else {
            Err(v.to_string())
        }
    })
    .await
}

async fn scenario(kind: Db) {
    let (env, ex, _) = Env::with_executor(kind, Duration::from_secs(5), APP).await;
    // Daily at 02:00 UTC, not started: a backfill needs no running schedule. `sleep` runs 1 s
    // (its parameter is no number) and counts how many run at once.
    let job = env
        .job(
            json!({"group": APP, "handler": "sleep", "schedule_type": "CRON", "schedule_expr": "0 0 2 * * ?",
                    "time_zone": "UTC", "param": "${fire_time:yyyy-MM-dd}"}),
        )
        .await;

    // 1. Thirty days, both ends fire times, three at once.
    let (from, to) = (utc(2026, 10, 1, 2), utc(2026, 10, 30, 2));
    let first = backfill(&env, job, json!({"from": from, "to": to, "at_once": 3})).await;
    assert_eq!(
        (first["fires"].as_i64(), first["already"].as_i64()),
        (Some(30), Some(0)),
        "{first}"
    );
    assert_eq!(first["state"], "running", "{first}");
    let id = first["id"].as_i64().unwrap();
    let done = ended(&env, job, id).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(
        (done["succeeded"].as_i64(), done["failed"].as_i64()),
        (Some(30), Some(0)),
        "{done}"
    );
    let got = ex.params_of(job);
    let want = days(from, 30);
    assert_eq!(got.len(), 30, "each fire time once: {got:?}");
    assert_eq!(
        got.iter().cloned().collect::<BTreeSet<_>>(),
        want.iter().cloned().collect(),
        "{got:?}"
    );
    let most = ex.seen.lock().unwrap().slow_most;
    assert_eq!(most, 3, "three at once, never more");
    // Each run stands for its fire time.
    let runs = env.api.runs(job).await;
    let scheduled: BTreeSet<i64> = runs.iter().map(|r| r["scheduled_at"].as_i64().unwrap()).collect();
    assert_eq!(
        scheduled,
        (0..30).map(|k| from + k * DAY).collect(),
        "one run per fire time"
    );
    assert!(runs.iter().all(|r| r["trigger_type"] == "BACKFILL"), "{runs:?}");

    // 2. Overlapping the first: only the three September days run, newest first.
    let second = backfill(
        &env,
        job,
        json!({"from": utc(2026, 9, 28, 0), "to": utc(2026, 10, 5, 23), "newest_first": true}),
    )
    .await;
    assert_eq!(
        (second["fires"].as_i64(), second["already"].as_i64()),
        (Some(3), Some(5)),
        "{second}"
    );
    ended(&env, job, second["id"].as_i64().unwrap()).await;
    let got = ex.params_of(job);
    assert_eq!(
        got[30..],
        ["2026-09-30", "2026-09-29", "2026-09-28"],
        "newest first, one at a time"
    );
    // The same range again: nothing left to run, done at once.
    let again = backfill(
        &env,
        job,
        json!({"from": utc(2026, 9, 28, 0), "to": utc(2026, 10, 5, 23)}),
    )
    .await;
    assert_eq!(
        (again["fires"].as_i64(), again["state"].as_str()),
        (Some(0), Some("done")),
        "{again}"
    );

    // 3. Cancelled after its first run started: nothing more starts, and what did not start is
    //    free for a later backfill.
    let august = json!({"from": utc(2026, 8, 1, 0), "to": utc(2026, 8, 31, 23)});
    let third = backfill(&env, job, august.clone()).await;
    let third_id = third["id"].as_i64().unwrap();
    eventually(30, "the first August run started", || async {
        let n = ex.params_of(job).len();
        if n > 33 {
            Ok(())
        } else {
            Err(n.to_string())
        }
    })
    .await;
    let (s, cancelled) = env
        .api
        .post(&format!("/v1/jobs/{job}/backfills/{third_id}/cancel"), json!({}))
        .await;
    assert_eq!(s, 200, "{cancelled}");
    assert_eq!(
        (cancelled["state"].as_str(), cancelled["waiting"].as_i64()),
        (Some("cancelled"), Some(0))
    );
    let (s, twice) = env
        .api
        .post(&format!("/v1/jobs/{job}/backfills/{third_id}/cancel"), json!({}))
        .await;
    assert_eq!(s, 409, "cancelled already: {twice}");
    let started_then = ["succeeded", "failed", "running"]
        .iter()
        .map(|k| cancelled[*k].as_i64().unwrap() as usize)
        .sum::<usize>();
    assert!((1..31).contains(&started_then), "{cancelled}");
    // Those started are delivered; nothing more arrives.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        ex.params_of(job).len() - 33,
        started_then,
        "nothing starts after the cancel"
    );
    let rest = backfill(&env, job, august).await;
    assert_eq!(
        (rest["fires"].as_i64(), rest["already"].as_i64()),
        (Some(31 - started_then as i64), Some(started_then as i64)),
        "{rest}"
    );
    let (s, list) = env.api.get(&format!("/v1/jobs/{job}/backfills")).await;
    assert_eq!(s, 200, "{list}");
    let ids: Vec<i64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 5, "{list}");
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");

    // 4. Refusals name the field; another job's backfill is not found under this one.
    let future = json!({"from": utc(2026, 1, 1, 0), "to": chime_admin::model::now_ms() + DAY});
    for (body, field) in [
        (future, "to"),
        (json!({"from": utc(2026, 3, 2, 0), "to": utc(2026, 3, 1, 0)}), "to"),
        (json!({"from": utc(2025, 1, 1, 0), "to": utc(2026, 6, 1, 0)}), "to"),
        (
            json!({"from": utc(2026, 1, 1, 0), "to": utc(2026, 1, 2, 0), "at_once": 0}),
            "at_once",
        ),
    ] {
        let (s, v) = env.api.post(&format!("/v1/jobs/{job}/backfills"), body).await;
        assert_eq!((s, v["field"].as_str()), (422, Some(field)), "{v}");
    }
    let (s, v) = env
        .api
        .post(
            &format!("/v1/jobs/{job}/backfills"),
            json!({"from": 1, "to": 2, "every": 3}),
        )
        .await;
    assert_eq!(s, 400, "an unknown field: {v}");
    let manual = env.job(json!({"group": APP, "handler": "ok"})).await;
    let (s, v) = env
        .api
        .post(
            &format!("/v1/jobs/{manual}/backfills"),
            json!({"from": utc(2026, 1, 1, 0), "to": utc(2026, 1, 2, 0)}),
        )
        .await;
    assert_eq!((s, v["field"].as_str()), (422, Some("schedule_type")), "{v}");
    let (s, v) = env.api.get(&format!("/v1/jobs/{manual}/backfills/{id}")).await;
    assert_eq!(s, 404, "backfill {id} is job {job}'s: {v}");
    let (s, v) = env
        .api
        .post(&format!("/v1/jobs/{manual}/backfills/{}/cancel", rest["id"]), json!({}))
        .await;
    assert_eq!(s, 404, "{v}");

    workflow_backfill(&env, &ex).await;
    ex.kill();
    env.close().await;
}

/// A workflow of two nodes backfilled over six days, two at once.
async fn workflow_backfill(env: &Env, ex: &TestExecutor) {
    let node = |param: &str| json!({"group": APP, "handler": "slow", "param": param});
    let a = env.job(node("${fire_time:yyyy-MM-dd}")).await;
    let b = env.job(node("b-${fire_time:yyyyMMdd}")).await;
    let body = json!({"name": "daily-load", "schedule_type": "CRON", "schedule_expr": "0 0 3 * * ?", "time_zone": "UTC",
        "definition": {"nodes": [{"key": "a", "job_id": a}, {"key": "b", "job_id": b}], "edges": [{"from": "a", "to": "b"}]}});
    let (s, w) = env.api.post("/v1/workflows", body).await;
    assert_eq!(s, 201, "{w}");
    let wf = w["id"].as_i64().unwrap();
    let from = utc(2026, 10, 1, 3);
    let (s, started) = env
        .api
        .post(
            &format!("/v1/workflows/{wf}/backfills"),
            json!({"from": from, "to": from + 5 * DAY, "at_once": 2}),
        )
        .await;
    assert_eq!(s, 201, "{started}");
    assert_eq!(
        (started["workflow_id"].as_i64(), started["job_id"].as_i64()),
        (Some(wf), None),
        "{started}"
    );
    assert_eq!(started["fires"], 6, "{started}");
    let id = started["id"].as_i64().unwrap();
    let done = eventually(120, "the workflow backfill done", || async {
        let (s, v) = env.api.get(&format!("/v1/workflows/{wf}/backfills/{id}")).await;
        assert_eq!(s, 200, "{v}");
        if v["state"] != "running" {
            Ok(v)
        } else {
            Err(v.to_string())
        }
    })
    .await;
    assert_eq!(
        (done["state"].as_str(), done["succeeded"].as_i64()),
        (Some("done"), Some(6)),
        "{done}"
    );
    let (_, list) = env
        .api
        .get(&format!("/v1/workflow-instances?workflow_id={wf}&limit=100"))
        .await;
    let instances = list.as_array().unwrap();
    let scheduled: BTreeSet<i64> = instances.iter().map(|i| i["scheduled_at"].as_i64().unwrap()).collect();
    assert_eq!(
        scheduled,
        (0..6).map(|k| from + k * DAY).collect(),
        "one instance per day: {list}"
    );
    assert!(
        instances
            .iter()
            .all(|i| i["trigger_type"] == "BACKFILL" && i["state"] == "succeeded"),
        "{list}"
    );
    // Never more than two at once: at each instance's start, fewer than two others were open.
    for i in instances {
        let start = i["created_at"].as_i64().unwrap();
        let open = instances
            .iter()
            .filter(|o| o["created_at"].as_i64().unwrap() < start && o["finished_at"].as_i64().unwrap() > start)
            .count();
        assert!(open < 2, "{open} instances open when one started: {list}");
    }
    let days = days(from, 6);
    let mut got_a = ex.params_of(a);
    got_a.sort();
    assert_eq!(got_a, days, "node a once per day, at that day");
    let mut got_b = ex.params_of(b);
    got_b.sort();
    let want_b: Vec<String> = days.iter().map(|d| format!("b-{}", d.replace('-', ""))).collect();
    assert_eq!(got_b, want_b, "node b once per day, after a");
    // Another workflow's path does not reach this backfill.
    let (s, v) = env
        .api
        .get(&format!("/v1/workflows/{}/backfills/{id}", wf + 1000))
        .await;
    assert_eq!(s, 404, "{v}");
}

#[tokio::test]
async fn backfill_sqlite() {
    scenario(Db::Sqlite).await;
}

#[tokio::test]
async fn backfill_postgres() {
    scenario(Db::Postgres).await;
}

#[tokio::test]
async fn backfill_mariadb() {
    scenario(Db::MySql).await;
}
