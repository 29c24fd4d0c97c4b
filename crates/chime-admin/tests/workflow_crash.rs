//! Workflows under SIGKILL: real `chime admin` processes fire four workflows of ten nodes
//! every second while the test kills them at random moments, on SQLite, MariaDB and
//! PostgreSQL; and two admins sharing PostgreSQL or MariaDB, one of them killed while
//! instances run. Afterwards every instance that was fired has finished, every node of it ran
//! (one node row, one run row, delivered to the executor), and no node was made twice: the
//! number of workflow runs equals the number of node rows. The in-test executor counts every
//! delivery of every run id; a run in flight at the moment of a kill may be delivered again
//! (counted, bounded), as for jobs.
//!
//! These tests run one at a time (`.config/nextest.toml`, group `process-kill`).

mod common;

use chime_protocol::messages::JOB_RESULT_LOST;
use common::cluster::Admin;
use common::executor::TestExecutor;
use common::process::free_port;
use common::{Api, Db, TestDb, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::{Duration, Instant};

const APP: &str = "wf-crash";
/// Workflows firing every second, each in its own partition.
const WORKFLOWS: usize = 4;
/// Nodes of each: root → three in parallel → join → four in parallel → last.
const NODES: usize = 10;
/// SIGKILLs of the one-admin scenario.
const KILLS: usize = 3;

fn loopback() -> IpAddr {
    IpAddr::V4(Ipv4Addr::LOCALHOST)
}

/// The ten-node graph, every node running one of `jobs`.
fn definition(jobs: &[i64]) -> Value {
    let keys = ["root", "p1", "p2", "p3", "join", "q1", "q2", "q3", "q4", "last"];
    let nodes: Vec<Value> = keys
        .iter()
        .zip(jobs)
        .map(|(k, j)| json!({"key": k, "job_id": j}))
        .collect();
    let mut edges = Vec::new();
    for p in ["p1", "p2", "p3"] {
        edges.push(json!({"from": "root", "to": p}));
        edges.push(json!({"from": p, "to": "join"}));
    }
    for q in ["q1", "q2", "q3", "q4"] {
        edges.push(json!({"from": "join", "to": q}));
        edges.push(json!({"from": q, "to": "last"}));
    }
    json!({"nodes": nodes, "edges": edges})
}

/// Creates the group, the jobs and the workflows (started, every second) through `api`, once
/// every admin of `admins` knows the group and its executor (a workflow fired by an admin
/// that has not yet refreshed its groups would find no executor); returns the workflows' ids.
async fn create_workflows(api: &Api, admins: &[Api]) -> Vec<i64> {
    api.ok("/v1/groups", json!({"app_name": APP})).await;
    for a in admins {
        a.wait_executors(APP, 1).await;
    }
    let mut jobs = Vec::new();
    for _ in 0..NODES {
        let v = api.ok("/v1/jobs", json!({"group": APP, "handler": "ok"})).await;
        jobs.push(v["id"].as_i64().unwrap());
    }
    let mut ids = Vec::new();
    for k in 0..WORKFLOWS {
        let v = api
            .ok(
                "/v1/workflows",
                json!({"name": format!("crash-{k}"), "schedule_type": "CRON", "schedule_expr": "* * * * * ?",
                       "running": true, "definition": definition(&jobs)}),
            )
            .await;
        ids.push(v["id"].as_i64().unwrap());
    }
    ids
}

/// Waits until no instance is queued or running.
async fn wait_instances_finished(api: &Api, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (_, running) = api.get("/v1/workflow-instances?state=running&limit=5").await;
        let (_, queued) = api.get("/v1/workflow-instances?state=queued&limit=5").await;
        let open = running.as_array().map_or(0, Vec::len) + queued.as_array().map_or(0, Vec::len);
        if open == 0 {
            return;
        }
        if Instant::now() >= deadline {
            // What the first open instance waits for: its nodes and their runs.
            let id = running[0]["id"].as_i64().or(queued[0]["id"].as_i64()).unwrap_or(0);
            let (_, instance) = api.get(&format!("/v1/workflow-instances/{id}")).await;
            let mut runs = Vec::new();
            for n in instance["nodes"].as_array().into_iter().flatten() {
                runs.push(api.get(&format!("/v1/runs/{}", n["run_id"])).await.1);
            }
            panic!("instances still open after {secs} s, e.g. {instance:#}\nits runs: {runs:#?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn text(row: &sqlx::any::AnyRow, column: &str) -> String {
    use sqlx::Row;
    match row.try_get::<String, _>(column) {
        Ok(s) => s,
        Err(_) => String::from_utf8_lossy(&row.try_get::<Vec<u8>, _>(column).unwrap()).into_owned(),
    }
}

/// The checks every scenario ends with; returns (instances, duplicate deliveries).
async fn check(db_url: &str, delivered: &[i64]) -> (usize, usize) {
    use sqlx::{Connection, Row};
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(db_url).await.unwrap();
    let instances: Vec<(i64, String)> = sqlx::query("SELECT id, state FROM workflow_instance")
        .fetch_all(&mut conn)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.try_get::<i64, _>("id").unwrap(), text(r, "state")))
        .collect();
    assert!(
        instances.len() >= WORKFLOWS * 3,
        "instances were fired: {}",
        instances.len()
    );
    let nodes = sqlx::query("SELECT instance_id, node, state, run_id, result FROM workflow_node_run")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    // A node run marked as being sent by an admin in the instant before its SIGKILL, and never
    // received, is failed as lost by the lost-run sweep (as for jobs: at most once, never
    // twice); its instance then fails. Any other failure is a fault.
    let lost_nodes: Vec<&sqlx::any::AnyRow> = nodes
        .iter()
        .filter(|r| text(r, "state") == "failed" && text(r, "result").starts_with(JOB_RESULT_LOST))
        .collect();
    let lost: HashSet<i64> = lost_nodes.iter().map(|r| r.try_get("instance_id").unwrap()).collect();
    let not_succeeded: Vec<&(i64, String)> = instances
        .iter()
        .filter(|(id, s)| s != "succeeded" && !(s == "failed" && lost.contains(id)))
        .collect();
    assert!(
        not_succeeded.is_empty(),
        "every instance finished and succeeded: {not_succeeded:?}"
    );
    // One kill can catch the sends in flight of several workflows' instances at once: the
    // bound is per kill and workflow, not a total (4 instances were seen at 3 kills).
    assert!(
        lost.len() <= KILLS * WORKFLOWS,
        "{} instances lost a node run at the kills",
        lost.len()
    );
    let mut per_instance: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut run_ids = HashSet::new();
    for r in &nodes {
        let instance: i64 = r.try_get("instance_id").unwrap();
        let state = text(r, "state");
        assert!(
            state == "succeeded" || (lost.contains(&instance) && matches!(state.as_str(), "failed" | "not_run")),
            "instance {instance}: node {} is {state}",
            text(r, "node")
        );
        let run: i64 = r.try_get("run_id").unwrap();
        assert!(run == 0 || run_ids.insert(run), "run {run} belongs to two nodes");
        per_instance.entry(instance).or_default().push(text(r, "node"));
    }
    for (instance, _) in &instances {
        let mut keys = per_instance.remove(instance).unwrap_or_default();
        keys.sort();
        keys.dedup();
        assert_eq!(
            keys.len(),
            NODES,
            "instance {instance}: every node once (run or not run): {keys:?}"
        );
    }
    let workflow_runs: i64 = sqlx::query("SELECT COUNT(*) AS n FROM run WHERE trigger_type = 'WORKFLOW'")
        .fetch_one(&mut conn)
        .await
        .unwrap()
        .try_get("n")
        .unwrap();
    assert_eq!(
        workflow_runs as usize,
        run_ids.len(),
        "one run per node that ran: no node was made twice"
    );
    let mut deliveries: HashMap<i64, usize> = HashMap::new();
    for id in delivered {
        *deliveries.entry(*id).or_default() += 1;
    }
    // A run never delivered must be one the sweep failed as lost: at a fan-out, several of an
    // instance's runs can be marked as being sent in the instant of a kill.
    let lost_runs: HashSet<i64> = lost_nodes.iter().map(|r| r.try_get("run_id").unwrap()).collect();
    let undelivered: Vec<&i64> = run_ids
        .iter()
        .filter(|id| !deliveries.contains_key(id) && !lost_runs.contains(id))
        .collect();
    assert!(
        undelivered.is_empty(),
        "node runs never delivered and not failed as lost: {undelivered:?}"
    );
    if !lost.is_empty() {
        eprintln!("{} instances failed: a node run lost at a kill", lost.len());
    }
    let duplicates = delivered.len() - deliveries.len();
    // At most the runs in flight at the kills.
    assert!(duplicates <= WORKFLOWS * NODES * 3, "{duplicates} duplicate deliveries");
    (instances.len(), duplicates)
}

fn pause(min_ms: u64, max_ms: u64) -> Duration {
    Duration::from_millis(rand::random_range(min_ms..=max_ms))
}

async fn wait_partitions(admins: &[&Admin], total: u64, each: bool) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut shares = Vec::new();
        for a in admins {
            shares.push(a.partitions(&http).await.unwrap_or(0));
        }
        if shares.iter().sum::<u64>() == total && (!each || shares.iter().all(|s| *s > 0)) {
            return;
        }
        assert!(Instant::now() < deadline, "partitions not taken: {shares:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One admin, killed with SIGKILL three times at random moments while instances run.
async fn killed_mid_instance(kind: Db) {
    let bin = common::chime_binary();
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("admin.log");
    let start = |bin: &Path| Admin::start(bin, &db.url, "wf-admin", (loopback(), port), None, &log);
    let mut admin = start(&bin);
    wait_partitions(&[&admin], 16, true).await;
    let api = admin.api();
    let executor = TestExecutor::start(&format!("http://127.0.0.1:{port}/xxl-job-admin"), APP, ACCESS_TOKEN).await;
    let workflows = create_workflows(&api, std::slice::from_ref(&api)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    for _ in 0..KILLS {
        tokio::time::sleep(pause(300, 2500)).await;
        admin.signal(libc::SIGKILL);
        tokio::time::sleep(pause(200, 2000)).await;
        admin = start(&bin);
        wait_partitions(&[&admin], 16, true).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for w in &workflows {
        api.ok(&format!("/v1/workflows/{w}/stop"), json!({})).await;
    }
    wait_instances_finished(&api, 150).await;
    let (instances, duplicates) = check(&db.url, &executor.log_ids()).await;
    eprintln!("{kind:?}: {instances} instances of {NODES} nodes, {duplicates} re-delivered after the kills");
    executor.kill();
    drop(admin);
    db.drop_db().await;
}

/// Two admins share the database; the one holding half of the workflows is killed while
/// their instances run, and the other finishes them.
async fn one_of_two_killed(kind: Db) {
    let bin = common::chime_binary();
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let (port_a, port_b) = (free_port(), free_port());
    // One after the other: the first creates the schema.
    let a = Admin::start(
        &bin,
        &db.url,
        "admin-a",
        (loopback(), port_a),
        None,
        &dir.path().join("a.log"),
    );
    wait_partitions(&[&a], 16, true).await;
    let b = Admin::start(
        &bin,
        &db.url,
        "admin-b",
        (loopback(), port_b),
        None,
        &dir.path().join("b.log"),
    );
    wait_partitions(&[&a, &b], 16, true).await;
    // The executor reports to the admin that stays.
    let executor = TestExecutor::start(&format!("http://127.0.0.1:{port_b}/xxl-job-admin"), APP, ACCESS_TOKEN).await;
    let api = b.api();
    let workflows = create_workflows(&api, &[a.api(), b.api()]).await;
    tokio::time::sleep(Duration::from_secs(3) + pause(0, 1500)).await;
    a.signal(libc::SIGKILL);
    wait_partitions(&[&b], 16, false).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    for w in &workflows {
        api.ok(&format!("/v1/workflows/{w}/stop"), json!({})).await;
    }
    wait_instances_finished(&api, 150).await;
    let (instances, duplicates) = check(&db.url, &executor.log_ids()).await;
    eprintln!("{kind:?}, two admins: {instances} instances, {duplicates} re-delivered after the kill");
    executor.kill();
    drop((a, b));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workflow_nodes_run_once_across_kill_9_sqlite() {
    killed_mid_instance(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workflow_nodes_run_once_across_kill_9_mariadb() {
    killed_mid_instance(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workflow_nodes_run_once_across_kill_9_postgres() {
    killed_mid_instance(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workflow_instances_finish_when_one_of_two_admins_is_killed_postgres() {
    one_of_two_killed(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn workflow_instances_finish_when_one_of_two_admins_is_killed_mariadb() {
    one_of_two_killed(Db::MySql).await;
}
