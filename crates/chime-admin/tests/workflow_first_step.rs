//! A node starts as soon as its parent's run ends, also when that run was sent by a route and
//! not by the workflow loop: a triggered instance's root, and a node an operator retried. The
//! loop's database search runs only once a tick; here the tick is 5 s, so a node that waited for
//! it would start seconds after its parent ended instead of at once. The admin in the test
//! process, a real `chime executor` over real HTTP, on SQLite, MariaDB and PostgreSQL.

mod common;

use common::demo_executor::{DemoExecutor, REAL_EXECUTOR_DEAD_TIMEOUT};
use common::{Db, Env};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const APP: &str = "wf-first";

/// Far longer than any step should take, far shorter than the tick (5 s).
const AT_ONCE_MS: i64 = 1_000;

/// The node `key` of an instance.
fn node<'a>(instance: &'a Value, key: &str) -> &'a Value {
    instance["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["node"] == key))
        .unwrap_or_else(|| panic!("no node {key}: {instance}"))
}

/// How long `child`'s run waited after `parent`'s run's result was recorded, in ms: from the
/// parent run's `handled_at` to the child run's creation.
async fn wait_after(env: &Env, instance: &Value, parent: &str, child: &str) -> i64 {
    let run = |key: &str| {
        let id = node(instance, key)["run_id"].as_i64().unwrap();
        async move {
            let (s, v) = env.api.get(&format!("/v1/runs/{id}")).await;
            assert_eq!(s, 200, "{v}");
            v
        }
    };
    let (parent_run, child_run) = (run(parent).await, run(child).await);
    let ended = parent_run["handled_at"].as_i64().unwrap();
    assert!(ended > 0, "{parent_run}");
    child_run["created_at"].as_i64().unwrap() - ended
}

async fn next_node_starts_at_once(kind: Db) {
    let env = Env::start_with(kind, |c| {
        c.dead_timeout = REAL_EXECUTOR_DEAD_TIMEOUT;
        c.tick = Duration::from_secs(5);
        c.lookahead = Duration::from_secs(5);
    })
    .await;
    env.group(APP).await;
    let _executor = DemoExecutor::start_with(&env.prefix, APP, &[]);
    env.api.wait_executors(APP, 1).await;
    // The root runs a little while: longer than the loop gathers results for, so its end is
    // not seen by the round the trigger woke.
    let root = env
        .job(json!({"group": APP, "handler": "sleepJobHandler", "param": "0.3"}))
        .await;
    let next = env.job(json!({"group": APP, "handler": "demoJobHandler"})).await;
    let (s, v) = env
        .api
        .post(
            "/v1/workflows",
            json!({"name": "two", "definition": {
                "nodes": [{"key": "root", "job_id": root}, {"key": "next", "job_id": next}],
                "edges": [{"from": "root", "to": "next"}]
            }}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let wf = v["id"].as_i64().unwrap();

    // 1. A triggered instance: the trigger sends the root run itself.
    for _ in 0..2 {
        let started = env.api.ok(&format!("/v1/workflows/{wf}/trigger"), json!({})).await;
        let instance = env
            .finished_instance(started["instance_id"].as_i64().unwrap(), 60)
            .await;
        assert_eq!(instance["state"], "succeeded", "{instance}");
        let waited = wait_after(&env, &instance, "root", "next").await;
        assert!(
            waited < AT_ONCE_MS,
            "the second node started {waited} ms after the root ended: {instance}"
        );
    }

    // 2. A node an operator retried: the root fails, then its job is fixed and the node retried.
    let (s, v) = env
        .api
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{root}"),
            Some(json!({"handler": "failJobHandler"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let started = env.api.ok(&format!("/v1/workflows/{wf}/trigger"), json!({})).await;
    let id = started["instance_id"].as_i64().unwrap();
    let failed = env.finished_instance(id, 60).await;
    assert_eq!(failed["state"], "failed", "{failed}");
    let (s, v) = env
        .api
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{root}"),
            Some(json!({"handler": "sleepJobHandler"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = env
        .api
        .post(&format!("/v1/workflow-instances/{id}/nodes/root/retry"), json!({}))
        .await;
    assert!((200..300).contains(&s), "retry: {s} {v}");
    let instance = common::eventually(60, "the retried instance succeeded", || async {
        let (_, v) = env.api.get(&format!("/v1/workflow-instances/{id}")).await;
        if v["state"] == "succeeded" {
            Ok(v)
        } else {
            Err(v.to_string())
        }
    })
    .await;
    let waited = wait_after(&env, &instance, "root", "next").await;
    assert!(
        waited < AT_ONCE_MS,
        "the second node started {waited} ms after the retried root ended: {instance}"
    );
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_node_starts_at_once_sqlite() {
    next_node_starts_at_once(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_node_starts_at_once_mysql() {
    next_node_starts_at_once(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_node_starts_at_once_postgres() {
    next_node_starts_at_once(Db::Postgres).await;
}
