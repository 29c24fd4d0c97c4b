//! Pause until: a job, every job of a group, and a workflow held back until a time, through the
//! real admin and an XXL-JOB executor over HTTP, on SQLite, MariaDB and PostgreSQL.
//!
//! * A job firing every second, paused for 6 s: the fires due while it is paused (past the
//!   look-ahead, which was claimed already) never reach the executor and are recorded as
//!   skipped by its misfire policy (`DO_NOTHING`), with the pause named; from the pause's end
//!   every second runs again, without anyone resuming it.
//! * `FIRE_ONCE_NOW`, resumed early: the fires the pause covered become one run, sent at once,
//!   even those less than the misfire threshold late (the pause's end is kept).
//! * A group's pause and resume reach each of its jobs; other groups' jobs are untouched.
//! * A workflow paused makes no instance for the seconds it covered, then fires again.
//! * Bad ends are refused: in the past, beyond 366 days, missing, or with unknown fields.

mod common;

use common::cluster::now_ms;
use common::{Db, Env};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

const APP: &str = "pauses";
/// The test admin's look-ahead: fires this close to the pause were claimed before it.
const LOOKAHEAD_MS: i64 = 2_000;
/// How long the job is paused.
const PAUSE_MS: i64 = 6_000;

/// Runs of `job` scheduled in `[from, to)`, by scheduled second.
async fn runs_between(env: &Env, job: i64, from: i64, to: i64) -> Vec<Value> {
    let mut runs: Vec<Value> = env
        .api
        .runs(job)
        .await
        .into_iter()
        .filter(|r| (from..to).contains(&r["scheduled_at"].as_i64().unwrap()))
        .collect();
    runs.sort_by_key(|r| r["scheduled_at"].as_i64());
    runs
}

async fn sleep_until(at: i64) {
    let left = (at - now_ms()).max(0);
    tokio::time::sleep(Duration::from_millis(left as u64)).await;
}

async fn scenario(kind: Db) {
    let (env, ex, group) = Env::with_executor(kind, Duration::from_secs(5), APP).await;
    let every_second = |misfire: &str| {
        json!({"group": APP, "handler": "ok", "schedule_type": "CRON", "schedule_expr": "* * * * * ?",
               "misfire_strategy": misfire, "running": true})
    };

    // 1. Paused for 6 s; it resumes by itself.
    let job = env.job(every_second("DO_NOTHING")).await;
    env.api
        .wait_runs(job, 30, "two sent runs", |r| {
            r.iter().filter(|r| r["status"] == "success").count() >= 2
        })
        .await;
    let paused_at = now_ms();
    let until = paused_at + PAUSE_MS;
    let answer = env
        .api
        .ok(&format!("/v1/jobs/{job}/pause"), json!({"until": until}))
        .await;
    assert_eq!(answer["paused_until"], until, "{answer}");
    let (s, listed) = env.api.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!((s, &listed["paused_until"]), (200, &json!(until)), "{listed}");
    sleep_until(until + 4_000).await;
    // Whole seconds the pause covered beyond the look-ahead, and seconds after it.
    let covered_from = (paused_at + LOOKAHEAD_MS) / 1000 * 1000 + 1000;
    let covered = runs_between(&env, job, covered_from, until).await;
    assert!(
        covered.len() >= 3,
        "the seconds the pause covered have runs: {covered:?}"
    );
    let received: HashSet<i64> = ex.log_ids().into_iter().collect();
    for r in &covered {
        assert_eq!(r["status"], "skipped", "{r}");
        assert!(r["trigger_msg"].as_str().unwrap().contains("paused until"), "{r}");
        assert!(!received.contains(&r["id"].as_i64().unwrap()), "sent while paused: {r}");
    }
    let after = runs_between(&env, job, (until + 999) / 1000 * 1000, until + 3_000).await;
    assert!(after.len() >= 2, "fires again after the pause: {after:?}");
    for r in &after {
        assert_eq!(r["status"], "success", "{r}");
        assert_eq!(r["trigger_type"], "CRON", "{r}");
    }
    env.api.ok(&format!("/v1/jobs/{job}/stop"), json!({})).await;

    // 2. FIRE_ONCE_NOW, resumed early: one run for the whole pause, sent at once.
    let once = env.job(every_second("FIRE_ONCE_NOW")).await;
    env.api
        .wait_runs(once, 30, "a sent run", |r| r.iter().any(|r| r["status"] == "success"))
        .await;
    let paused_at = now_ms();
    env.api
        .ok(
            &format!("/v1/jobs/{once}/pause"),
            json!({"until": paused_at + 3_600_000}),
        )
        .await;
    sleep_until(paused_at + 6_000).await;
    let resumed_at = now_ms();
    let answer = env.api.ok(&format!("/v1/jobs/{once}/resume"), json!({})).await;
    // The pause ends now, and its end is kept: what it covered is missed, however recent.
    let ended = answer["paused_until"].as_i64().unwrap();
    assert!((resumed_at..=now_ms()).contains(&ended), "{answer}");
    let runs = env
        .api
        .wait_runs(once, 20, "the pause's one misfire run", |r| {
            r.iter()
                .any(|r| r["trigger_type"] == "MISFIRE" && r["status"] == "success")
        })
        .await;
    // The skipped fires are recorded as MISFIRE runs too; one was sent.
    let misfires: Vec<&Value> = runs
        .iter()
        .filter(|r| r["trigger_type"] == "MISFIRE" && r["status"] != "skipped")
        .collect();
    assert_eq!(misfires.len(), 1, "{misfires:?}");
    assert!(
        misfires[0]["triggered_at"].as_i64().unwrap() >= resumed_at,
        "{misfires:?}"
    );
    // Every fire the pause covered (past the look-ahead) is the one misfire run or skipped:
    // none ran late as if on time.
    let covered = runs_between(&env, once, (paused_at + LOOKAHEAD_MS) / 1000 * 1000 + 1000, resumed_at).await;
    assert!(covered.len() >= 3, "{covered:?}");
    for r in &covered {
        assert!(r["trigger_type"] == "MISFIRE" || r["status"] == "skipped", "{r}");
    }
    env.api.ok(&format!("/v1/jobs/{once}/stop"), json!({})).await;

    // 3. A group's pause reaches each of its jobs, and only them.
    env.group("other-app").await;
    let other = env.job(json!({"group": "other-app", "handler": "ok"})).await;
    let until = now_ms() + 600_000;
    let answer = env
        .api
        .ok(&format!("/v1/groups/{APP}/pause"), json!({"until": until}))
        .await;
    assert_eq!(answer, json!({"group_id": group, "jobs": 2, "paused_until": until}));
    for id in [job, once] {
        assert_eq!(env.api.get(&format!("/v1/jobs/{id}")).await.1["paused_until"], until);
    }
    assert_eq!(env.api.get(&format!("/v1/jobs/{other}")).await.1["paused_until"], 0);
    let answer = env.api.ok(&format!("/v1/groups/{group}/resume"), json!({})).await;
    assert_eq!(answer["jobs"], 2, "{answer}");
    let ended = env.api.get(&format!("/v1/jobs/{job}")).await.1["paused_until"]
        .as_i64()
        .unwrap();
    assert!(ended <= now_ms(), "resumed: {ended}");
    // Resuming what is not paused changes nothing.
    assert_eq!(
        env.api.ok(&format!("/v1/groups/{group}/resume"), json!({})).await["jobs"],
        0
    );

    // 4. Bad ends are refused and change nothing.
    for (body, field) in [
        (json!({"until": now_ms() - 1_000}), Some("until")),
        (json!({"until": now_ms() + 367 * 86_400_000}), Some("until")),
        (json!({}), None),
        (json!({"until": now_ms() + 60_000, "why": "x"}), None),
    ] {
        let (s, v) = env.api.post(&format!("/v1/jobs/{job}/pause"), body.clone()).await;
        assert!(matches!(s, 400 | 422), "{body}: {s} {v}");
        if let Some(f) = field {
            assert_eq!((s, v["field"].as_str()), (422, Some(f)), "{body}: {v}");
        }
    }
    assert_eq!(env.api.get(&format!("/v1/jobs/{job}")).await.1["paused_until"], ended);
    let (s, _) = env
        .api
        .post("/v1/jobs/999999/pause", json!({"until": now_ms() + 60_000}))
        .await;
    assert_eq!(s, 404);

    // 5. A workflow paused makes no instance for the seconds it covered.
    let (s, v) = env
        .api
        .post(
            "/v1/workflows",
            json!({"name": "paused-flow", "schedule_type": "CRON", "schedule_expr": "* * * * * ?",
                   "definition": {"nodes": [{"key": "a", "job_id": other}], "edges": []}}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let wf = v["id"].as_i64().unwrap();
    env.api.ok(&format!("/v1/workflows/{wf}/start"), json!({})).await;
    let instances = || async {
        let (s, v) = env
            .api
            .get(&format!("/v1/workflow-instances?workflow_id={wf}&limit=1000"))
            .await;
        assert_eq!(s, 200, "{v}");
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i["scheduled_at"].as_i64().unwrap())
            .collect::<Vec<i64>>()
    };
    common::eventually(30, "a first instance", || async {
        if instances().await.is_empty() {
            Err("none yet".to_owned())
        } else {
            Ok(())
        }
    })
    .await;
    let paused_at = now_ms();
    let until = paused_at + PAUSE_MS;
    let answer = env
        .api
        .ok(&format!("/v1/workflows/{wf}/pause"), json!({"until": until}))
        .await;
    assert_eq!(answer["paused_until"], until, "{answer}");
    sleep_until(until + 3_000).await;
    let fired = instances().await;
    let covered_from = (paused_at + LOOKAHEAD_MS) / 1000 * 1000 + 1000;
    let during: Vec<i64> = fired
        .iter()
        .copied()
        .filter(|at| (covered_from..until).contains(at))
        .collect();
    assert!(during.is_empty(), "instances fired while paused: {during:?}");
    assert!(
        fired.iter().any(|at| *at >= until),
        "the workflow fires again after its pause: {fired:?}"
    );
    env.api.ok(&format!("/v1/workflows/{wf}/stop"), json!({})).await;

    ex.kill();
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pauses_sqlite() {
    scenario(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pauses_mysql() {
    scenario(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pauses_postgres() {
    scenario(Db::Postgres).await;
}
