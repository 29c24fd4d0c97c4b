//! Date placeholders in parameters, through the real admin and an XXL-JOB executor over HTTP, on
//! SQLite, MariaDB and PostgreSQL:
//!
//! * a cron job's `${fire_time:…}`, `${bizdate}` and offsets reach the executor resolved from
//!   each run's scheduled second in the job's zone (checked against chrono's own formatting),
//!   `$${` arrives as a literal `${`, and the run shows what was sent;
//! * a manual trigger's parameter resolves from the time it was triggered;
//! * a malformed placeholder is refused (422) when a job is saved, a run is triggered or a
//!   workflow is saved, with where and why;
//! * a parameter stored before placeholders were checked (`${HOME}`) is sent as written and
//!   does not stop other edits of its job;
//! * every node of a workflow instance resolves from the instance's fire time, the later node
//!   too.

mod common;

use chrono::TimeZone;
use chrono_tz::Tz;
use common::executor::TestExecutor;
use common::{Db, Env};
use reqwest::Method;
use serde_json::{json, Value};
use sqlx::Connection;
use std::time::Duration;

const APP: &str = "dates";
const ZONE: Tz = chrono_tz::Asia::Shanghai;

/// `ms` in the job's zone, as chrono formats it (`%Y-%m-%d` and so on).
fn local(ms: i64, format: &str) -> String {
    ZONE.timestamp_millis_opt(ms).unwrap().format(format).to_string()
}

/// The parameter the executor received for run `id`.
fn received(ex: &TestExecutor, id: i64) -> Option<String> {
    let seen = ex.seen.lock().unwrap();
    seen.runs
        .iter()
        .find(|r| r.log_id == id)
        .map(|r| r.executor_params.clone())
}

async fn run(env: &Env, id: i64) -> Value {
    let (s, v) = env.api.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(s, 200, "{v}");
    v
}

/// Waits for run `id` to reach the executor; returns the parameter it carried.
async fn delivered(env: &Env, ex: &TestExecutor, id: i64) -> String {
    let _ = env;
    common::eventually(20, &format!("run {id} at the executor"), || async {
        received(ex, id).ok_or_else(|| "not yet".to_owned())
    })
    .await
}

async fn scenario(kind: Db) {
    let (env, ex, _) = Env::with_executor(kind, Duration::from_secs(5), APP).await;

    // 1. A cron job, every second, in Shanghai.
    let template = "day=${fire_time:yyyy-MM-dd HH:mm:ss} biz=${bizdate} hour_before=${fire_time-1h:HH} \
                    month=${fire_time:MMM} literal=$${fire_time} $HOME";
    let cron = env
        .job(json!({
            "group": APP, "handler": "ok", "schedule_type": "CRON", "schedule_expr": "* * * * * ?",
            "time_zone": "Asia/Shanghai", "param": template, "running": true
        }))
        .await;
    let runs = env
        .api
        .wait_runs(cron, 30, "three sent runs", |runs| {
            runs.iter().filter(|r| r["status"] == "success").count() >= 3
        })
        .await;
    env.api
        .call(
            Method::PUT,
            &format!("/v1/jobs/{cron}"),
            Some(json!({"running": false})),
        )
        .await;
    for r in runs.iter().filter(|r| r["status"] == "success").take(3) {
        let id = r["id"].as_i64().unwrap();
        let at = r["scheduled_at"].as_i64().unwrap();
        let expected = format!(
            "day={} biz={} hour_before={} month={} literal=${{fire_time}} $HOME",
            local(at, "%Y-%m-%d %H:%M:%S"),
            local(at - 86_400_000, "%Y%m%d"),
            local(at - 3_600_000, "%H"),
            local(at, "%b"),
        );
        assert_eq!(delivered(&env, &ex, id).await, expected, "run {id}");
        assert_eq!(r["param"], expected, "the run shows what was sent: {r}");
    }

    // 2. A manual trigger's own parameter resolves from when it was triggered.
    let manual = env
        .job(json!({"group": APP, "handler": "ok", "time_zone": "Asia/Shanghai"}))
        .await;
    let id = env
        .trigger(
            manual,
            json!({"param": "at=${fire_time:unix_ms} date=${fire_time:yyyyMMdd}"}),
        )
        .await;
    let sent = delivered(&env, &ex, id).await;
    let at = run(&env, id).await["scheduled_at"].as_i64().unwrap();
    assert_eq!(sent, format!("at={at} date={}", local(at, "%Y%m%d")));

    // 3. Malformed placeholders are refused with where and why, and nothing is stored.
    let (s, v) = env
        .api
        .post(
            "/v1/jobs",
            json!({"group": APP, "handler": "ok", "param": "x ${fire_tme}"}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "param", "{v}");
    let why = v["error"].as_str().unwrap();
    assert!(why.contains("character 3") && why.contains("fire_tme"), "{v}");
    let (s, v) = env
        .api
        .post(
            &format!("/v1/jobs/{manual}/trigger"),
            json!({"param": "${bizdate:yyyy-QQ}"}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert!(v["error"].as_str().unwrap().contains("`QQ`"), "{v}");
    let (s, v) = env
        .api
        .call(
            Method::PUT,
            &format!("/v1/jobs/{manual}"),
            Some(json!({"param": "${fire_time-1}"})),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert!(v["error"].as_str().unwrap().contains("unit"), "{v}");
    let (s, v) = env
        .api
        .post(
            "/v1/workflows",
            json!({"name": "bad-dates", "definition": {"nodes": [
                {"key": "a", "job_id": manual, "param": "${fire_time"}
            ], "edges": []}}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "definition.nodes[a].param", "{v}");

    // 4. A parameter stored before it was checked is sent as written; the job stays editable.
    let old = env.job(json!({"group": APP, "handler": "ok"})).await;
    let mut conn = sqlx::AnyConnection::connect(&env.db.url).await.unwrap();
    sqlx::query(&format!(
        "UPDATE job SET param = '${{HOME}}/in ${{fire_time' WHERE id = {old}"
    ))
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let (s, v) = env
        .api
        .call(
            Method::PUT,
            &format!("/v1/jobs/{old}"),
            Some(json!({"description": "still editable"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let id = env.trigger(old, json!({})).await;
    assert_eq!(delivered(&env, &ex, id).await, "${HOME}/in ${fire_time");

    // 5. Both nodes of an instance see the instance's fire time, the second one too (it starts
    // after the first has ended).
    let (s, v) = env
        .api
        .post(
            "/v1/workflows",
            json!({"name": "dated", "definition": {
                "nodes": [
                    {"key": "first", "job_id": manual, "param": "${fire_time:yyyy-MM-dd HH:mm:ss.SSS}"},
                    {"key": "second", "job_id": manual, "param": "${fire_time:yyyy-MM-dd HH:mm:ss.SSS} ${bizdate}"}
                ],
                "edges": [{"from": "first", "to": "second"}]
            }}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let wf = v["id"].as_i64().unwrap();
    let started = env.api.ok(&format!("/v1/workflows/{wf}/trigger"), json!({})).await;
    let instance = env
        .finished_instance(started["instance_id"].as_i64().unwrap(), 60)
        .await;
    assert_eq!(instance["state"], "succeeded", "{instance}");
    let fired = instance["scheduled_at"].as_i64().unwrap();
    let stamp = local(fired, "%Y-%m-%d %H:%M:%S%.3f");
    let node_run = |key: &str| {
        instance["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"] == key)
            .and_then(|n| n["run_id"].as_i64())
            .unwrap_or_else(|| panic!("no run of node {key}: {instance}"))
    };
    assert_eq!(delivered(&env, &ex, node_run("first")).await, stamp);
    let second = node_run("second");
    assert_eq!(
        delivered(&env, &ex, second).await,
        format!("{stamp} {}", local(fired - 86_400_000, "%Y%m%d"))
    );
    assert!(
        run(&env, second).await["created_at"].as_i64().unwrap() > fired,
        "the second node's run was made after the fire time it shows"
    );

    ex.kill();
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dates_resolve_sqlite() {
    scenario(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dates_resolve_mysql() {
    scenario(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dates_resolve_postgres() {
    scenario(Db::Postgres).await;
}
