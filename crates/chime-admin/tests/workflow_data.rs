//! A workflow node's upstream results reach it as data, never as code, on SQLite, MariaDB and
//! PostgreSQL: the admin in the test process, the nodes run by a real `chime executor` with
//! script jobs and the `shell` handler enabled, over real HTTP. The upstream node's result is
//! shell code (`$(touch …)`); no node downstream runs it:
//!
//! * a `{{up.result}}` in the parameter of a node whose job runs code is refused (422, naming
//!   the node);
//! * the `shell` handler and a GLUE_SHELL script read the result from `CHIME_UPSTREAM_RESULTS`;
//! * a job turned into a `shell` job after its workflow was saved gets the result pasted in as
//!   one single-quoted word.
//!
//! The marker file the code would create is never there.

mod common;

use common::demo_executor::{DemoExecutor, REAL_EXECUTOR_DEAD_TIMEOUT};
use common::{Db, Env};
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

const APP: &str = "wf-data";

/// Creates workflow `body` and runs one instance of it to its end; returns the instance.
async fn run_workflow(env: &Env, body: Value) -> Value {
    let (s, v) = env.api.post("/v1/workflows", body).await;
    assert_eq!(s, 201, "{v}");
    let wf = v["id"].as_i64().unwrap();
    let started = env.api.ok(&format!("/v1/workflows/{wf}/trigger"), json!({})).await;
    env.finished_instance(started["instance_id"].as_i64().unwrap(), 60)
        .await
}

/// The JSON object a node wrote into `path`.
fn written_results(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

async fn results_are_data(kind: Db) {
    let env = Env::start(kind, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    env.group(APP).await;
    let _executor = DemoExecutor::start_with(&env.prefix, APP, &["--enable-scripts", "--enable-shell-handler"]);
    env.api.wait_executors(APP, 1).await;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pwned");
    let evil = format!("$(touch {})", marker.display());
    // The demo handler's result is its parameter: the upstream node "returns" shell code.
    let up = env
        .job(json!({"group": APP, "handler": "demoJobHandler", "param": evil}))
        .await;
    let shell = env
        .job(json!({"group": APP, "handler": "shell", "param": "true"}))
        .await;

    // 1. Pasting the result into the shell handler's command is refused, naming the node.
    let (s, v) = env
        .api
        .post(
            "/v1/workflows",
            json!({"name": "pasted", "definition": {
                "nodes": [{"key": "up", "job_id": up}, {"key": "run", "job_id": shell, "param": "echo {{up.result}}"}],
                "edges": [{"from": "up", "to": "run"}]
            }}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "definition.nodes[run].param", "{v}");
    assert!(v["error"].as_str().unwrap().contains("CHIME_UPSTREAM_RESULTS"), "{v}");

    // 2. The shell handler and a script read it as data, from the environment.
    let by_shell = dir.path().join("by-shell.json");
    let by_script = dir.path().join("by-script.json");
    let script = env
        .job(json!({
            "group": APP, "glue_type": "GLUE_SHELL",
            "glue_source": format!("printf '%s' \"$CHIME_UPSTREAM_RESULTS\" > {}", by_script.display())
        }))
        .await;
    let done = run_workflow(
        &env,
        json!({"name": "as-data", "definition": {
            "nodes": [
                {"key": "up", "job_id": up},
                {"key": "run", "job_id": shell,
                 "param": format!("printf '%s' \"$CHIME_UPSTREAM_RESULTS\" > {}", by_shell.display())},
                {"key": "script", "job_id": script}
            ],
            "edges": [{"from": "up", "to": "run"}, {"from": "up", "to": "script"}]
        }}),
    )
    .await;
    assert_eq!(done["state"], "succeeded", "{done:#}");
    let want: BTreeMap<String, String> = [("up".to_owned(), evil.clone())].into_iter().collect();
    assert_eq!(written_results(&by_shell), want, "the shell handler's environment");
    assert_eq!(written_results(&by_script), want, "the script's environment");
    assert!(!marker.exists(), "the result ran as code");

    // 3. A job that becomes a shell job after its workflow was saved: the result is quoted in.
    let later = env.job(json!({"group": APP, "handler": "demoJobHandler"})).await;
    let echoed = dir.path().join("echoed.txt");
    let (s, v) = env
        .api
        .post(
            "/v1/workflows",
            json!({"name": "changed-later", "definition": {
                "nodes": [{"key": "up", "job_id": up},
                          {"key": "later", "job_id": later, "param": format!("echo {{{{up.result}}}} > {}", echoed.display())}],
                "edges": [{"from": "up", "to": "later"}]
            }}),
        )
        .await;
    assert_eq!(s, 201, "a data job may name a result: {v}");
    let wf = v["id"].as_i64().unwrap();
    let (s, v) = env
        .api
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{later}"),
            Some(json!({"handler": "shell"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let started = env.api.ok(&format!("/v1/workflows/{wf}/trigger"), json!({})).await;
    let done = env
        .finished_instance(started["instance_id"].as_i64().unwrap(), 60)
        .await;
    assert_eq!(done["state"], "succeeded", "{done:#}");
    let text = std::fs::read_to_string(&echoed).unwrap();
    assert_eq!(text, format!("{evil}\n"), "echoed as one quoted word");
    assert!(!marker.exists(), "the result ran as code");
    env.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn results_are_data_sqlite() {
    results_are_data(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn results_are_data_mysql() {
    results_are_data(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn results_are_data_postgres() {
    results_are_data(Db::Postgres).await;
}
