//! Linked executors (`chime executor --link`, real processes) with several admins and with the
//! loss of the executor itself:
//!
//! - `linked_to_both_admins_one_killed`: two `chime admin` processes share PostgreSQL; the
//!   executor links to both. One admin is killed with SIGKILL: the other takes its partitions
//!   over and sends down its own link, and every second of every job has exactly one run, which
//!   succeeded and which the executor ran exactly once (counted by the job's script).
//! - `linked_to_one_admin_relayed`: the executor links to one of the two admins only; runs of
//!   the partitions the other admin holds reach it through the relay (`POST /api/linkRelay` to
//!   the admin holding the link, found by its `--advertise-url`). The trigger report names the
//!   admin that sent each run: both admins' runs succeed at the executor.
//! - `logs_outlive_a_killed_linked_executor`: a linked executor is killed with SIGKILL and its
//!   log directory deleted; the logs of its finished runs, sent up the link, are read from the
//!   admin.
//! - `mixed_fleet`: one group holding a linked Chime executor, an HTTP-mode Chime executor and
//!   pyxxl (a third-party XXL-JOB executor): `ROUND` gives runs to all three, and each run's log
//!   is read through the admin, whichever way the admin reaches its executor. Needs
//!   `python3 -m pip install pyxxl==0.4.8` (scripts/test installs it).

mod common;

use common::demo_executor::{DemoExecutor, REAL_EXECUTOR_DEAD_TIMEOUT};
use common::linked::{wait_linked, AdminProcess, Journal, LinkedExecutor};
use common::process::free_port;
use common::pyxxl_executor::PyExecutor;
use common::{eventually, finished, status, succeeded, Api, Db, Env, TestDb};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

const APP: &str = "lnk-cluster";
/// Jobs firing every second: enough to land in partitions of both admins.
const JOBS: usize = 8;
/// Partitions the admins share.
const PARTITIONS: u64 = 16;

/// The current wall-clock time, epoch ms (the clock run rows are stamped with).
fn now_ms() -> i64 {
    chime_admin::model::now_ms()
}

/// Two admins (`admin-a`, `admin-b`) on one fresh PostgreSQL database, each advertising its
/// loopback address to the other, both holding partitions.
struct Pair {
    admins: Vec<AdminProcess>,
    db: Option<TestDb>,
    /// The admins' logs and the journal; `None` once kept for a failed test.
    dir: Option<tempfile::TempDir>,
    http: reqwest::Client,
}

impl Pair {
    async fn start() -> Pair {
        let db = TestDb::new(Db::Postgres).await;
        let dir = tempfile::tempdir().unwrap();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(1))
            .no_proxy()
            .build()
            .unwrap();
        let mut pair = Pair {
            admins: Vec::new(),
            db: None,
            dir: Some(dir),
            http,
        };
        for node in ["admin-a", "admin-b"] {
            let at = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), free_port());
            let url = format!("http://{at}{}", common::linked::CONTEXT_PATH);
            let admin = AdminProcess::start(&db.url, at, node, pair.dir(), &["--advertise-url", &url]).await;
            pair.admins.push(admin);
        }
        pair.db = Some(db);
        pair.wait_shares("both admins to hold partitions", |s| {
            s.iter().all(|n| *n >= 1) && s.iter().sum::<u64>() == PARTITIONS
        })
        .await;
        pair
    }

    /// The directory of the admins' logs and the journal.
    fn dir(&self) -> &std::path::Path {
        self.dir.as_ref().expect("the pair is running").path()
    }

    /// `/healthz` of admin `k`: the partitions it holds, 0 if it does not answer.
    async fn partitions(&self, k: usize) -> u64 {
        let url = format!("http://{}/healthz", self.admins[k].addr);
        let Ok(reply) = self.http.get(url).send().await else {
            return 0;
        };
        reply
            .json::<Value>()
            .await
            .ok()
            .and_then(|v| v["partitions"].as_u64())
            .unwrap_or(0)
    }

    /// Waits (at most 60 s) until the admins' partitions satisfy `pred`.
    async fn wait_shares(&self, what: &str, pred: impl Fn(&[u64]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut shares = Vec::new();
            for k in 0..self.admins.len() {
                shares.push(self.partitions(k).await);
            }
            if pred(&shares) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {shares:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Creates group [`APP`] through admin `k`.
    async fn group(&self, k: usize) {
        let api = self.admins[k].api();
        api.ok("/v1/groups", json!({"app_name": APP, "title": "linked"})).await;
    }

    /// Creates [`JOBS`] script jobs firing every second, through admin `k`.
    async fn jobs(&self, k: usize, journal: &Journal) -> Vec<i64> {
        let api = self.admins[k].api();
        let mut ids = Vec::new();
        for _ in 0..JOBS {
            let v = api
                .ok(
                    "/v1/jobs",
                    json!({"group": APP, "description": "linked", "glue_type": "GLUE_SHELL",
                           "glue_source": journal.script("true"), "schedule_type": "CRON",
                           "schedule_expr": "* * * * * ?", "running": true}),
                )
                .await;
            ids.push(v["id"].as_i64().unwrap());
        }
        ids
    }

    /// Lines of admin `k`'s output saying executor `id` linked.
    fn linked_lines(&self, k: usize, id: &str) -> usize {
        self.admins[k]
            .output()
            .lines()
            .filter(|l| l.contains("executor linked") && l.contains(&format!("executor={id} ")))
            .count()
    }

    async fn close(mut self) {
        self.admins.clear();
        if let Some(db) = self.db.take() {
            db.drop_db().await;
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // A failing test keeps the admins' logs (their tails are printed as they die).
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                eprintln!("admin logs kept in {}", dir.keep().display());
            }
        }
    }
}

/// The node named in a run's trigger report (`…<br>Admin：admin-a<br>…`).
fn sender(run: &Value) -> String {
    run["trigger_msg"]
        .as_str()
        .and_then(|m| m.split("Admin：").nth(1))
        .and_then(|m| m.split("<br>").next())
        .unwrap_or("?")
        .to_owned()
}

/// Every run of `jobs` at `api`, newest first per job, once none is pending or running
/// (the jobs stopped first).
async fn stop_and_collect(api: &Api, jobs: &[i64]) -> BTreeMap<i64, Vec<Value>> {
    for id in jobs {
        let (s, v) = api.post(&format!("/v1/jobs/{id}/stop"), json!({})).await;
        assert_eq!(s, 200, "stopping job {id}: {v}");
    }
    let mut all = BTreeMap::new();
    for id in jobs {
        let runs = api
            .wait_runs(*id, 60, "every run ended", |r| {
                r.iter()
                    .all(|r| matches!(status(r), "success" | "failed" | "skipped") && r["trigger_code"] != 0)
            })
            .await;
        all.insert(*id, runs);
    }
    all
}

/// Waits until every admin of `nodes` sent a successful run scheduled after `after`.
async fn wait_senders(api: &Api, jobs: &[i64], nodes: &[&str], after: i64) {
    eventually(60, &format!("{nodes:?} to send runs"), || async {
        let mut senders: HashMap<String, usize> = HashMap::new();
        for id in jobs {
            for r in api.runs(*id).await {
                if succeeded(&r) && r["scheduled_at"].as_i64().unwrap() > after {
                    *senders.entry(sender(&r)).or_default() += 1;
                }
            }
        }
        if nodes.iter().all(|n| senders.get(*n).is_some_and(|c| *c >= 3)) {
            Ok(())
        } else {
            Err(format!("{senders:?}"))
        }
    })
    .await;
}

/// Checks the runs of every job: one per second from before `from` to after `to`, all
/// successful, each executed exactly once at the executor (the journal) — and returns how many
/// each admin sent.
fn check_every_second(
    runs: &BTreeMap<i64, Vec<Value>>,
    journal: &Journal,
    from: i64,
    to: i64,
) -> BTreeMap<String, usize> {
    let mut executed: HashMap<i64, usize> = HashMap::new();
    for e in journal.entries() {
        *executed.entry(e.run).or_default() += 1;
    }
    let mut senders = BTreeMap::new();
    let mut problems = Vec::new();
    for (job, runs) in runs {
        common::assert_every_second_ran_once(*job, runs.iter().map(|r| r["scheduled_at"].as_i64().unwrap()), from, to);
        for r in runs {
            let id = r["id"].as_i64().unwrap();
            *senders.entry(sender(r)).or_default() += 1;
            if status(r) != "success" || r["trigger_type"] != "CRON" {
                problems.push(format!("job {job}: run {id} did not run as scheduled: {r}"));
            }
            match executed.get(&id).copied().unwrap_or(0) {
                1 => {}
                n => problems.push(format!("job {job}: run {id} executed {n} times: {r}")),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems (disturbance {from}..{to}), the first 20:\n{}",
        problems.len(),
        problems.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
    senders
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn linked_to_both_admins_one_killed() {
    let mut pair = Pair::start().await;
    let journal = Journal::new(pair.dir().join("journal"));
    let api = pair.admins[1].api();
    pair.group(1).await;
    let bases: Vec<String> = pair.admins.iter().map(AdminProcess::base).collect();
    let executor = LinkedExecutor::start(&bases, APP, "e1", None);
    wait_linked(&api, APP, &["e1"]).await;
    eventually(60, "the executor to link to both admins", || async {
        let lines = (pair.linked_lines(0, "e1"), pair.linked_lines(1, "e1"));
        if lines.0 > 0 && lines.1 > 0 {
            Ok(())
        } else {
            Err(format!("{lines:?}"))
        }
    })
    .await;
    // Jobs once the executor is there: every run has somewhere to go.
    let jobs = pair.jobs(1, &journal).await;
    wait_senders(&api, &jobs, &["admin-a", "admin-b"], now_ms()).await;

    pair.admins[0].kill_9();
    let killed_at = now_ms();
    pair.wait_shares("admin-b to hold every partition", |s| s[1] == PARTITIONS)
        .await;
    let took_over_at = now_ms();
    eprintln!(
        "admin-b held every partition {} ms after the kill",
        took_over_at - killed_at
    );
    // Some seconds sent by admin-b alone, down its own link.
    wait_senders(&api, &jobs, &["admin-b"], took_over_at + 2000).await;

    let runs = stop_and_collect(&api, &jobs).await;
    let senders = check_every_second(&runs, &journal, killed_at, took_over_at);
    eprintln!("runs per sending admin: {senders:?}");
    drop(executor);
    pair.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn linked_to_one_admin_relayed() {
    let pair = Pair::start().await;
    let journal = Journal::new(pair.dir().join("journal"));
    let api = pair.admins[1].api();
    pair.group(1).await;
    // Linked to admin-a only.
    let executor = LinkedExecutor::start(&[pair.admins[0].base()], APP, "e1", None);
    wait_linked(&api, APP, &["e1"]).await;
    // Jobs once the executor is there: every run has somewhere to go.
    let jobs = pair.jobs(1, &journal).await;
    wait_senders(&api, &jobs, &["admin-a", "admin-b"], now_ms()).await;
    assert_eq!(pair.linked_lines(1, "e1"), 0, "the executor never linked to admin-b");
    assert!(pair.linked_lines(0, "e1") > 0, "the executor linked to admin-a");

    let runs = stop_and_collect(&api, &jobs).await;
    let executed: HashMap<i64, String> = journal.entries().into_iter().map(|e| (e.run, e.executor)).collect();
    let mut per_sender: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut problems = Vec::new();
    for (job, runs) in &runs {
        for r in runs {
            let id = r["id"].as_i64().unwrap();
            let who = sender(r);
            let entry = per_sender.entry(who.clone()).or_default();
            entry.0 += 1;
            if status(r) == "success" && executed.get(&id).map(String::as_str) == Some("e1") {
                entry.1 += 1;
            } else {
                problems.push(format!("job {job}: run {id} sent by {who} did not succeed at e1: {r}"));
            }
            assert_eq!(common::address_of(r), "link://e1", "{r}");
        }
    }
    eprintln!("runs per sending admin (sent, succeeded at the executor): {per_sender:?}");
    assert!(
        problems.is_empty(),
        "{} problems, the first 20:\n{}",
        problems.len(),
        problems.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
    for node in ["admin-a", "admin-b"] {
        assert!(
            per_sender.get(node).is_some_and(|(_, ok)| *ok >= 3),
            "{node} sent runs that succeeded: {per_sender:?}"
        );
    }
    drop(executor);
    pair.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn logs_outlive_a_killed_linked_executor() {
    let e = Env::start(Db::Sqlite, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    e.group("lnk-logs").await;
    let mut executor = LinkedExecutor::start(std::slice::from_ref(&e.prefix), "lnk-logs", "logs-1", None);
    wait_linked(&e.api, "lnk-logs", &["logs-1"]).await;
    let job = e.job(json!({"group": "lnk-logs", "handler": "demoJobHandler"})).await;
    let mut run_ids = Vec::new();
    for k in 0..3 {
        run_ids.push(e.trigger(job, json!({"param": format!("kept by the admin {k}")})).await);
    }
    let runs = e
        .api
        .wait_runs(job, 30, "the runs finished", |r| finished(r) == 3)
        .await;
    assert!(runs.iter().all(|r| status(r) == "success"), "{runs:#?}");
    // The logs went up the link after the results.
    for run in &run_ids {
        e.stored_log(*run).await;
    }

    let log_dir = executor.log_dir();
    assert!(log_dir.exists(), "the executor wrote its logs to {}", log_dir.display());
    executor.kill_9();
    std::fs::remove_dir_all(&log_dir).unwrap();
    for (k, run) in run_ids.iter().enumerate() {
        let (s, v) = e.api.get(&format!("/v1/runs/{run}/log")).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!((&v["stored"], &v["is_end"]), (&json!(true), &json!(true)), "{v}");
        let content = v["content"].as_str().unwrap();
        assert!(
            content.contains(&format!("XXL-JOB, Hello World. param=kept by the admin {k}")),
            "{content}"
        );
    }
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_fleet() {
    const MIXED: &str = "lnk-mixed";
    let e = Env::start(Db::Sqlite, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    e.group(MIXED).await;
    let linked = LinkedExecutor::start(std::slice::from_ref(&e.prefix), MIXED, "mixed-1", None);
    let http = DemoExecutor::start(&e.prefix, MIXED);
    let py = PyExecutor::start(&e.prefix, MIXED);
    let py_address = py.address.clone();
    let mut expected = vec![linked.address(), http.address.clone(), py_address.clone()];
    expected.sort();
    let listed = e.api.wait_executors(MIXED, 3).await;
    assert_eq!(listed, expected, "all three registered, the linked one by its link");
    let (_, group) = e.api.get(&format!("/v1/executors?group={MIXED}")).await;
    for entry in group[0]["executors"].as_array().unwrap() {
        let is_link = entry["address"] == linked.address().as_str();
        assert_eq!(entry["linked"], is_link, "{entry}");
    }

    // ROUND over the three, the same handler name on every kind: two runs each.
    let job = e
        .job(json!({"group": MIXED, "handler": "demoJobHandler", "route_strategy": "ROUND", "param": "mixed fleet"}))
        .await;
    let used = e.trigger_n(job, 6).await;
    let mut per_executor: BTreeMap<String, usize> = BTreeMap::new();
    for address in used {
        *per_executor.entry(address).or_default() += 1;
    }
    assert_eq!(
        per_executor.keys().cloned().collect::<Vec<_>>(),
        expected,
        "ROUND gave runs to every executor: {per_executor:?}"
    );
    // Each run's log through the admin: down the link, over HTTP from Chime's executor and
    // from pyxxl.
    for r in e.api.runs(job).await {
        let id = r["id"].as_i64().unwrap();
        let (s, log) = e.api.get(&format!("/v1/runs/{id}/log?from_line=1")).await;
        assert_eq!(s, 200, "{r} {log}");
        assert!(
            log["content"]
                .as_str()
                .unwrap_or("")
                .contains("Hello World. param=mixed fleet"),
            "the log of run {id} on {}: {log}",
            common::address_of(&r)
        );
    }
    drop(linked);
    drop(http);
    e.close().await;
}
