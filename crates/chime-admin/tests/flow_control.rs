//! Flow control end to end: limits on running runs, the queue, priorities, "run now" and
//! cancel, on each database, with an executor over real HTTP that counts what it runs.

mod common;

use common::executor::TestExecutor;
use common::{eventually, status, Db, Env, ACCESS_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

async fn env_with_executor(kind: Db, app: &str) -> (Env, TestExecutor, i64) {
    Env::with_executor(kind, Duration::from_secs(30), app).await
}

async fn set_limit(env: &Env, name: &str, max: i64) -> Value {
    let path = format!("/v1/limits/{}", urlencoding(name));
    let (s, v) = env
        .api
        .call(Method::PUT, &path, Some(json!({ "max_running": max })))
        .await;
    assert_eq!(s, 200, "{v}");
    v
}

/// A limit's name in a path: `:` and `/` escaped.
fn urlencoding(name: &str) -> String {
    name.replace('%', "%25").replace(':', "%3A").replace('/', "%2F")
}

async fn queue(env: &Env) -> Vec<Value> {
    let (s, v) = env.api.get("/v1/queue").await;
    assert_eq!(s, 200, "{v}");
    v.as_array().unwrap().clone()
}

async fn wait_queued(env: &Env, n: usize) -> Vec<Value> {
    eventually(20, &format!("{n} runs queued"), || async {
        let q = queue(env).await;
        if q.len() == n {
            Ok(q)
        } else {
            Err(format!("{q:#?}"))
        }
    })
    .await
}

fn delivered_jobs(ex: &TestExecutor) -> Vec<i64> {
    ex.seen.lock().unwrap().runs.iter().map(|t| t.job_id).collect()
}

async fn job(env: &Env, group: i64, handler: &str, key: &str, priority: i64) -> i64 {
    env.job(json!({
        "group_id": group, "handler": handler, "concurrency_key": key, "priority": priority,
    }))
    .await
}

/// A limit of 2 on a concurrency key: two hanging runs hold both slots, six more wait in the
/// queue (three of a job of priority 10, three of priority 0, the latter queued first), and as
/// slots free the high-priority runs go first; the limit's counts follow.
async fn a_full_limit_queues_runs_and_frees_them_by_priority(kind: Db) {
    let (env, ex, group) = env_with_executor(kind, "flow").await;
    let created = set_limit(&env, "warehouse-db", 2).await;
    assert_eq!(created["max_running"], 2, "{created}");
    let blocker_a = job(&env, group, "hang", "warehouse-db", 0).await;
    let blocker_b = job(&env, group, "hang", "warehouse-db", 0).await;
    let low = job(&env, group, "ok", "warehouse-db", 0).await;
    let high = job(&env, group, "ok", "warehouse-db", 10).await;
    let shown = env.api.get(&format!("/v1/jobs/{high}")).await.1;
    assert_eq!(
        (shown["priority"].as_i64(), shown["concurrency_key"].as_str()),
        (Some(10), Some("warehouse-db"))
    );

    let hang_a = env.trigger(blocker_a, json!({})).await;
    let hang_b = env.trigger(blocker_b, json!({})).await;
    env.run_with_status(hang_a, "running").await;
    env.run_with_status(hang_b, "running").await;
    let mut low_runs = Vec::new();
    for _ in 0..3 {
        low_runs.push(env.trigger(low, json!({})).await);
    }
    wait_queued(&env, 3).await;
    let mut high_runs = Vec::new();
    for _ in 0..3 {
        high_runs.push(env.trigger(high, json!({})).await);
    }
    let listed = wait_queued(&env, 6).await;
    let order: Vec<i64> = listed.iter().map(|e| e["job_id"].as_i64().unwrap()).collect();
    assert_eq!(
        order,
        [high, high, high, low, low, low],
        "higher priority first: {listed:#?}"
    );
    assert_eq!(listed[0]["waits_on"], "warehouse-db");
    assert_eq!(listed[0]["position"], 1);
    for id in low_runs.iter().chain(&high_runs) {
        assert_eq!(status(&env.run(*id).await), "pending", "a queued run is pending");
    }
    // Nothing beyond the limit reached the executor.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        delivered_jobs(&ex),
        [blocker_a, blocker_b],
        "only the two holding slots were sent"
    );
    let (_, limits) = env.api.get("/v1/limits").await;
    assert_eq!(limits[0]["running"], 2, "{limits}");
    assert_eq!(limits[0]["queued"], 6, "{limits}");
    let series = r#"chime_limit_queued{limit="warehouse-db"}"#;
    eventually(10, "the queue's gauge", || async {
        match env.api.metric(series).await {
            Some(6.0) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // One slot frees: the queue drains through it, high priority first.
    let (s, v) = env.api.post(&format!("/v1/runs/{hang_a}/kill"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    for id in low_runs.iter().chain(&high_runs) {
        env.run_with_status(*id, "success").await;
    }
    let after: Vec<i64> = delivered_jobs(&ex).into_iter().skip(2).collect();
    assert_eq!(after, [high, high, high, low, low, low], "sent in priority order");
    assert!(queue(&env).await.is_empty());
    let (s, v) = env.api.post(&format!("/v1/runs/{hang_b}/kill"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    eventually(10, "every slot given back", || async {
        let (_, limits) = env.api.get("/v1/limits").await;
        if limits[0]["running"] == 0 && limits[0]["queued"] == 0 {
            Ok(())
        } else {
            Err(limits.to_string())
        }
    })
    .await;
    ex.kill();
    env.close().await;
}

#[tokio::test]
async fn a_full_limit_queues_runs_and_frees_them_by_priority_sqlite() {
    a_full_limit_queues_runs_and_frees_them_by_priority(Db::Sqlite).await;
}

#[tokio::test]
async fn a_full_limit_queues_runs_and_frees_them_by_priority_mariadb() {
    a_full_limit_queues_runs_and_frees_them_by_priority(Db::MySql).await;
}

#[tokio::test]
async fn a_full_limit_queues_runs_and_frees_them_by_priority_postgres() {
    a_full_limit_queues_runs_and_frees_them_by_priority(Db::Postgres).await;
}

/// A group's limit of 3 with 60 runs of 300 ms triggered at once: every run succeeds, each
/// reached the executor once, and the executor never ran more than 3 at a time. (Runs long
/// enough that, on a loaded machine too, a slot is taken again before the others end: with
/// runs of 40 ms the admin sometimes had only 2 under way.)
async fn the_executor_never_runs_more_than_the_limit(kind: Db) {
    let (env, ex, group) = env_with_executor(kind, "capped").await;
    set_limit(&env, "group:capped", 3).await;
    let slow = env
        .job(json!({"group_id": group, "handler": "sleep", "param": "300"}))
        .await;
    let mut runs = Vec::new();
    for _ in 0..60 {
        runs.push(env.trigger(slow, json!({})).await);
    }
    for id in &runs {
        env.wait_run(*id, 60, "the run succeeded", |r| status(r) == "success")
            .await;
    }
    let (mut ids, most): (Vec<i64>, usize) = {
        let seen = ex.seen.lock().unwrap();
        (seen.runs.iter().map(|t| t.log_id).collect(), seen.slow_most)
    };
    ids.sort_unstable();
    let mut expected = runs.clone();
    expected.sort_unstable();
    assert_eq!(ids, expected, "each run reached the executor once");
    assert!(most <= 3, "at most 3 at once, saw {most}");
    assert_eq!(most, 3, "the limit was used");
    ex.kill();
    env.close().await;
}

#[tokio::test]
async fn the_executor_never_runs_more_than_the_limit_sqlite() {
    the_executor_never_runs_more_than_the_limit(Db::Sqlite).await;
}

#[tokio::test]
async fn the_executor_never_runs_more_than_the_limit_mariadb() {
    the_executor_never_runs_more_than_the_limit(Db::MySql).await;
}

#[tokio::test]
async fn the_executor_never_runs_more_than_the_limit_postgres() {
    the_executor_never_runs_more_than_the_limit(Db::Postgres).await;
}

/// "Run now" sends a queued run past its full limit; cancel ends one unsent; both refuse a run
/// that is not queued; a bad limit is refused with its field; deleting the limit lets the rest
/// go.
async fn run_now_cancel_and_deleting_a_limit(kind: Db) {
    let (env, ex, group) = env_with_executor(kind, "ops").await;
    let address = ex.address.clone();
    set_limit(&env, &format!("executor:{address}"), 1).await;
    let blocker = job(&env, group, "hang", "", 0).await;
    let work = job(&env, group, "ok", "", 0).await;
    let hang = env.trigger(blocker, json!({})).await;
    env.run_with_status(hang, "running").await;
    let first = env.trigger(work, json!({})).await;
    let second = env.trigger(work, json!({})).await;
    let third = env.trigger(work, json!({})).await;
    wait_queued(&env, 3).await;

    let (s, v) = env.api.post(&format!("/v1/runs/{first}/run-now"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    env.run_with_status(first, "success").await;
    let (s, v) = env.api.post(&format!("/v1/runs/{second}/cancel"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    let cancelled = env.run(second).await;
    assert_eq!(status(&cancelled), "killed", "{cancelled:#}");
    for refused in ["run-now", "cancel"] {
        let (s, v) = env.api.post(&format!("/v1/runs/{first}/{refused}"), json!({})).await;
        assert_eq!(s, 409, "{refused} of a run not queued: {v}");
    }
    for bad in ["a b", "group:", "executor:nohttp"] {
        let path = format!("/v1/limits/{}", urlencoding(bad));
        let (s, v) = env
            .api
            .call(Method::PUT, &path, Some(json!({ "max_running": 1 })))
            .await;
        assert!(s == 400 || s == 422, "{bad}: {s} {v}");
    }
    let path = "/v1/limits/x";
    let (s, v) = env.api.call(Method::PUT, path, Some(json!({ "max_running": 0 }))).await;
    assert!(s == 400 || s == 422, "{s} {v}");

    // The third still waits; without its limit it goes.
    assert_eq!(status(&env.run(third).await), "pending");
    let path = format!("/v1/limits/{}", urlencoding(&format!("executor:{address}")));
    let (s, v) = env.api.call(Method::DELETE, &path, None).await;
    assert_eq!(s, 204, "{v}");
    env.run_with_status(third, "success").await;
    let delivered: Vec<i64> = ex.seen.lock().unwrap().runs.iter().map(|t| t.log_id).collect();
    assert!(!delivered.contains(&second), "a cancelled run is never sent");
    let (s, v) = env.api.call(Method::DELETE, &path, None).await;
    assert_eq!(s, 404, "{v}");
    ex.kill();
    env.close().await;
}

#[tokio::test]
async fn run_now_cancel_and_deleting_a_limit_sqlite() {
    run_now_cancel_and_deleting_a_limit(Db::Sqlite).await;
}

#[tokio::test]
async fn run_now_cancel_and_deleting_a_limit_mariadb() {
    run_now_cancel_and_deleting_a_limit(Db::MySql).await;
}

#[tokio::test]
async fn run_now_cancel_and_deleting_a_limit_postgres() {
    run_now_cancel_and_deleting_a_limit(Db::Postgres).await;
}

/// A rate of 5 a second and no cap on running runs: 15 runs triggered at once start over at
/// least three windows, never more than two windows' worth in any second.
async fn a_rate_limit_spreads_starts(kind: Db) {
    let (env, ex, group) = env_with_executor(kind, "rated").await;
    let path = "/v1/limits/api-quota";
    let body = json!({ "rate": 5, "per": "second" });
    let (s, v) = env.api.call(Method::PUT, path, Some(body)).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["rate"].as_i64(), v["per"].as_str(), &v["max_running"]),
        (Some(5), Some("second"), &Value::Null)
    );
    let quota = job(&env, group, "ok", "api-quota", 0).await;
    let mut runs = Vec::new();
    for _ in 0..15 {
        runs.push(env.trigger(quota, json!({})).await);
    }
    for id in &runs {
        env.wait_run(*id, 30, "the run succeeded", |r| status(r) == "success")
            .await;
    }
    let mut at: Vec<i64> = ex.deliveries().iter().map(|d| d.at).collect();
    at.sort_unstable();
    assert_eq!(at.len(), 15, "each run delivered once");
    assert!(
        at[14] - at[0] >= 1000,
        "15 starts at 5 a second span more than a second: {at:?}"
    );
    for (i, first) in at.iter().enumerate() {
        let within = at[i..].iter().take_while(|t| **t < first + 1000).count();
        assert!(within <= 10, "{within} starts within a second of {first}: {at:?}");
    }
    ex.kill();
    env.close().await;
}

#[tokio::test]
async fn a_rate_limit_spreads_starts_sqlite() {
    a_rate_limit_spreads_starts(Db::Sqlite).await;
}

#[tokio::test]
async fn a_rate_limit_spreads_starts_mariadb() {
    a_rate_limit_spreads_starts(Db::MySql).await;
}

#[tokio::test]
async fn a_rate_limit_spreads_starts_postgres() {
    a_rate_limit_spreads_starts(Db::Postgres).await;
}

/// A run that waits longer than its limit's queue timeout fails, never sent, with the reason.
async fn a_run_past_its_queue_timeout_fails(kind: Db) {
    let (env, ex, group) = env_with_executor(kind, "timed").await;
    let path = "/v1/limits/batch";
    let body = json!({ "max_running": 1, "queue_timeout_secs": 1 });
    let (s, v) = env.api.call(Method::PUT, path, Some(body)).await;
    assert_eq!(s, 200, "{v}");
    let blocker = job(&env, group, "hang", "batch", 0).await;
    let waiting = job(&env, group, "ok", "batch", 0).await;
    let hang = env.trigger(blocker, json!({})).await;
    env.run_with_status(hang, "running").await;
    let late = env.trigger(waiting, json!({})).await;
    wait_queued(&env, 1).await;
    let failed = env
        .wait_run(late, 20, "the queued run failed", |r| status(r) == "failed")
        .await;
    let msg = failed["trigger_msg"].as_str().unwrap_or_default();
    assert!(msg.contains("queue timeout"), "{failed:#}");
    let delivered: Vec<i64> = ex.log_ids();
    assert!(!delivered.contains(&late), "never sent");
    eventually(10, "the queue empty", || async {
        let q = queue(&env).await;
        if q.is_empty() {
            Ok(())
        } else {
            Err(format!("{q:#?}"))
        }
    })
    .await;
    ex.kill();
    env.close().await;
}

#[tokio::test]
async fn a_run_past_its_queue_timeout_fails_sqlite() {
    a_run_past_its_queue_timeout_fails(Db::Sqlite).await;
}

#[tokio::test]
async fn a_run_past_its_queue_timeout_fails_mariadb() {
    a_run_past_its_queue_timeout_fails(Db::MySql).await;
}

#[tokio::test]
async fn a_run_past_its_queue_timeout_fails_postgres() {
    a_run_past_its_queue_timeout_fails(Db::Postgres).await;
}

/// An executor killed while it runs every run holding a limit's slots: once it is gone (dead
/// timeout) its runs end as lost, their slots are given back, and the runs queued behind them
/// go to the executor that is left. Nothing stays pending, nothing reaches two executors.
async fn a_killed_executors_runs_give_their_slots_back(kind: Db) {
    let env = Env::start(kind, Duration::from_secs(3)).await;
    let group = env.group("failover").await;
    let first = TestExecutor::start(&env.prefix, "failover", ACCESS_TOKEN).await;
    let second = TestExecutor::start(&env.prefix, "failover", ACCESS_TOKEN).await;
    env.api.wait_executors("failover", 2).await;
    set_limit(&env, "gpu", 3).await;
    let job = env
        .job(json!({
            "group_id": group, "handler": "hang", "concurrency_key": "gpu", "route_strategy": "FAILOVER",
        }))
        .await;
    let mut runs = Vec::new();
    for _ in 0..6 {
        runs.push(env.trigger(job, json!({})).await);
    }
    // Sends go out in parallel: which three hold the slots is not known beforehand.
    let mut waiting: Vec<i64> = wait_queued(&env, 3)
        .await
        .iter()
        .map(|e| e["run_id"].as_i64().unwrap())
        .collect();
    let mut holding: Vec<i64> = runs.iter().copied().filter(|r| !waiting.contains(r)).collect();
    for id in &holding {
        env.run_with_status(*id, "running").await;
    }
    // The executor FAILOVER chose holds all three running runs: it dies.
    let (victim, survivor) = if first.run_count() == 3 {
        (&first, &second)
    } else {
        (&second, &first)
    };
    assert_eq!((victim.run_count(), survivor.run_count()), (3, 0));
    victim.kill();
    for id in &holding {
        env.wait_run(*id, 30, "the dead executor's run ended as lost", |r| {
            status(r) == "failed"
        })
        .await;
    }
    for id in &waiting {
        env.run_with_status(*id, "running").await;
    }
    let mut on_survivor = survivor.log_ids();
    on_survivor.sort_unstable();
    waiting.sort_unstable();
    assert_eq!(
        on_survivor, waiting,
        "the queued runs went to the executor left, once each"
    );
    let mut on_victim = victim.log_ids();
    on_victim.sort_unstable();
    holding.sort_unstable();
    assert_eq!(on_victim, holding, "the lost runs were not sent again");
    let (_, limits) = env.api.get("/v1/limits").await;
    assert_eq!(
        (&limits[0]["running"], &limits[0]["queued"]),
        (&json!(3), &json!(0)),
        "{limits}"
    );
    first.kill();
    second.kill();
    env.close().await;
}

#[tokio::test]
async fn a_killed_executors_runs_give_their_slots_back_sqlite() {
    a_killed_executors_runs_give_their_slots_back(Db::Sqlite).await;
}

#[tokio::test]
async fn a_killed_executors_runs_give_their_slots_back_mariadb() {
    a_killed_executors_runs_give_their_slots_back(Db::MySql).await;
}

#[tokio::test]
async fn a_killed_executors_runs_give_their_slots_back_postgres() {
    a_killed_executors_runs_give_their_slots_back(Db::Postgres).await;
}

/// A workflow node's own concurrency key and priority, over its job's: with a limit of 1 held
/// by another job, three nodes of an unkeyed job wait under the key the nodes give them, the
/// one of priority 50 first, and reach the executor one at a time; a node that gives its keyed
/// job no key (`""`) runs past the full limit; a failing node sent on by "run now" is retried
/// under its own key and priority (20), so the retry waits in the queue.
async fn a_workflow_nodes_own_key_and_priority(kind: Db) {
    let (env, ex, group) = env_with_executor(kind, "nodes").await;
    set_limit(&env, "warehouse-db", 1).await;
    set_limit(&env, "ledger-db", 1).await;
    let blocker = job(&env, group, "hang", "warehouse-db", 0).await;
    let ledger_blocker = job(&env, group, "hang", "ledger-db", 0).await;
    let plain = env
        .job(json!({ "group_id": group, "handler": "sleep", "param": "300" }))
        .await;
    let keyed = job(&env, group, "ok", "warehouse-db", 0).await;
    let failing = env
        .job(json!({ "group_id": group, "handler": "fail", "retry_count": 1 }))
        .await;
    let hang = env.trigger(blocker, json!({})).await;
    let ledger_hang = env.trigger(ledger_blocker, json!({})).await;
    env.run_with_status(hang, "running").await;
    env.run_with_status(ledger_hang, "running").await;

    let node = |key: &str, job: i64, flow: Value| {
        let mut n = json!({ "key": key, "job_id": job });
        n.as_object_mut().unwrap().extend(flow.as_object().unwrap().clone());
        n
    };
    let body = json!({
        "name": "keyed-nodes",
        "definition": { "nodes": [
            node("low1", plain, json!({ "concurrency_key": "warehouse-db" })),
            node("high", plain, json!({ "concurrency_key": "warehouse-db", "priority": 50 })),
            node("low2", plain, json!({ "concurrency_key": "warehouse-db" })),
            node("retried", failing, json!({ "concurrency_key": "ledger-db", "priority": 20 })),
            node("free", keyed, json!({ "concurrency_key": "" })),
        ] }
    });
    let (s, v) = env.api.post("/v1/workflows", body).await;
    assert_eq!(s, 201, "{v}");
    let wf = v["id"].as_i64().unwrap();
    let (_, shown) = env.api.get(&format!("/v1/workflows/{wf}")).await;
    assert_eq!(shown["definition"]["nodes"][1]["priority"], 50, "{shown:#}");
    let bad = json!({ "name": "bad", "definition": { "nodes": [
        node("a", plain, json!({ "concurrency_key": "group:nodes" })),
    ] } });
    let (s, v) = env.api.post("/v1/workflows", bad).await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "definition.nodes[a].concurrency_key", "{v}");

    let started = env.api.ok(&format!("/v1/workflows/{wf}/trigger"), json!({})).await;
    let instance = started["instance_id"].as_i64().unwrap();
    let listed = wait_queued(&env, 4).await;
    let waits: Vec<(i64, &str)> = (listed.iter())
        .map(|e| (e["priority"].as_i64().unwrap(), e["waits_on"].as_str().unwrap()))
        .collect();
    let expected = [
        (50, "warehouse-db"),
        (20, "ledger-db"),
        (0, "warehouse-db"),
        (0, "warehouse-db"),
    ];
    assert_eq!(waits, expected, "{listed:#?}");
    let node_run = |i: &Value, key: &str| {
        i["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"] == key)
            .and_then(|n| n["run_id"].as_i64())
    };
    // The node that took its job's key away ran while the limit was full.
    let free = eventually(20, "the free node ran", || async {
        let (_, i) = env.api.get(&format!("/v1/workflow-instances/{instance}")).await;
        match node_run(&i, "free") {
            Some(run) if status(&env.run(run).await) == "success" => Ok(run),
            other => Err(format!("{other:?} {i:#}")),
        }
    })
    .await;

    // The failing node, sent on past its full limit, fails; its retry waits as the node did.
    let tried = listed[1]["run_id"].as_i64().unwrap();
    let (s, v) = env.api.post(&format!("/v1/runs/{tried}/run-now"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    env.run_with_status(tried, "failed").await;
    let retry = eventually(20, "the retry queued", || async {
        let q = queue(&env).await;
        let retry = q.iter().find(|e| e["job_id"] == failing && e["run_id"] != tried);
        match retry {
            Some(e) if e["priority"] == 20 && e["waits_on"] == "ledger-db" => Ok(e["run_id"].as_i64().unwrap()),
            _ => Err(format!("{q:#?}")),
        }
    })
    .await;
    assert_eq!(env.run(retry).await["trigger_type"], "RETRY");

    for blocking in [hang, ledger_hang] {
        let (s, v) = env.api.post(&format!("/v1/runs/{blocking}/kill"), json!({})).await;
        assert_eq!(s, 200, "{v}");
    }
    let done = env.finished_instance(instance, 60).await;
    assert_eq!(done["state"], "failed", "the failing node failed twice: {done:#}");
    let run_of = |key: &str| node_run(&done, key).unwrap();
    let sent: Vec<i64> = (ex.log_ids().into_iter())
        .filter(|id| ![hang, ledger_hang, free, tried, retry].contains(id))
        .collect();
    assert_eq!(sent[0], run_of("high"), "priority 50 first: {sent:?}");
    let mut lows = sent[1..].to_vec();
    lows.sort_unstable();
    let mut expected = vec![run_of("low1"), run_of("low2")];
    expected.sort_unstable();
    assert_eq!(lows, expected, "{sent:?}");
    let most = ex.seen.lock().unwrap().slow_most;
    assert_eq!(most, 1, "one node run under the key at a time");
    ex.kill();
    env.close().await;
}

#[tokio::test]
async fn a_workflow_nodes_own_key_and_priority_sqlite() {
    a_workflow_nodes_own_key_and_priority(Db::Sqlite).await;
}

#[tokio::test]
async fn a_workflow_nodes_own_key_and_priority_mariadb() {
    a_workflow_nodes_own_key_and_priority(Db::MySql).await;
}

#[tokio::test]
async fn a_workflow_nodes_own_key_and_priority_postgres() {
    a_workflow_nodes_own_key_and_priority(Db::Postgres).await;
}
