//! Executors killed with SIGKILL in the middle of a run and started again at the same address
//! within the dead timeout, so they never leave their group: the run the killed process had
//! accepted is failed as lost and retried on the new process, long before `--lost-result-after`.
//! And a run waiting in a SERIAL_EXECUTION queue behind a long one is not taken for lost. On
//! SQLite, MariaDB and PostgreSQL, with real executor processes:
//!
//! - Chime's executor (`chime executor --demo-handlers`), which says in each registration which
//!   process it is: the admin sees a new process at the address (and asks it about a run sent
//!   just before it started);
//! - pyxxl 0.4.8, which does not: it answers `/idleBeat` that it does not have the job, twice,
//!   `--lost-idle-confirm` apart.
//!
//! Needs `python3 -m pip install pyxxl==0.4.8` (scripts/test installs it).

mod common;

use chime_admin::model::now_ms;
use chime_protocol::messages::JOB_RESULT_LOST;
use common::demo_executor::REAL_EXECUTOR_DEAD_TIMEOUT;
use common::process::{free_port, OwnedProcess};
use common::{Db, Env, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// An admin in the test process on a fresh database whose executors are dead after
/// `dead_timeout` without heartbeat, and whose runs are lost after two idle answers
/// `idle_confirm` apart.
async fn start(kind: Db, dead_timeout: Duration, idle_confirm: Duration) -> Env {
    Env::start_with(kind, |config| {
        config.dead_timeout = dead_timeout;
        config.lost_idle_confirm = idle_confirm;
    })
    .await
}

/// Triggers `job` by hand with `param`; returns the run id.
async fn trigger(e: &Env, job: i64, param: &str) -> i64 {
    e.trigger(job, json!({ "param": param })).await
}

fn accepted(r: &Value) -> bool {
    r["trigger_code"] == 200
}

fn handled(r: &Value) -> bool {
    matches!(r["status"].as_str(), Some("success" | "failed")) && r["trigger_code"] != 0
}

/// `chime executor --demo-handlers` registering in `app`, listening on `port`, its run logs and
/// callback spool in `dir` (kept across restarts, as on a real host).
fn chime_executor(admin_base: &str, app: &str, port: u16, dir: &Path) -> OwnedProcess {
    let mut command = Command::new(common::chime_binary());
    command
        .args(["executor", "--demo-handlers"])
        .args(["--admin", admin_base, "--appname", app, "--token", ACCESS_TOKEN])
        .args(["--listen", &format!("127.0.0.1:{port}"), "--logdir"])
        .arg(dir.join("runs"))
        .env("RUST_LOG", "info");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CHIME_") {
            command.env_remove(key);
        }
    }
    OwnedProcess::spawn(
        &format!("chime executor {app}@{port}"),
        &mut command,
        Some(&dir.join("output.log")),
    )
}

/// A pyxxl executor (`tests/pyxxl/executor.py`) registering in `app`, listening on `port`.
fn pyxxl_executor(admin_base: &str, app: &str, port: u16, dir: &Path) -> OwnedProcess {
    let ok = Command::new("python3")
        .args(["-c", "import pyxxl"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "pyxxl is not installed: python3 -m pip install pyxxl==0.4.8 (scripts/test does this)"
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pyxxl/executor.py");
    let mut command = Command::new("python3");
    command
        .args([
            script,
            &format!("{admin_base}/api/"),
            app,
            ACCESS_TOKEN,
            &port.to_string(),
            &dir.display().to_string(),
        ])
        .current_dir(dir);
    OwnedProcess::spawn(
        &format!("pyxxl executor {app}@{port}"),
        &mut command,
        Some(&dir.join("output.log")),
    )
}

/// A Chime executor with two runs in progress is killed and started again at once. The run sent
/// well before the restart is failed because a new process serves the address; the one sent
/// just before it (within the margin for a call still on its way, which the new process might
/// have taken) is failed once the new process said twice that it does not have its job — or,
/// on a machine slow to start the new process, for the restart too. Both retries run there.
async fn a_restarted_chime_executor_s_runs_are_retried(kind: Db) {
    let e = start(kind, REAL_EXECUTOR_DEAD_TIMEOUT, Duration::from_secs(5)).await;
    let app = "chime-restart";
    e.api.ok("/v1/groups", json!({ "app_name": app })).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let address = format!("http://127.0.0.1:{port}");
    let mut executor = chime_executor(&e.prefix, app, port, dir.path());
    e.api.wait_executors(app, 1).await;
    let directory = &e.admin.admin.directory;
    let first = common::eventually(10, "the executor to say which process it is", || async {
        directory
            .executor_process(app, &address)
            .ok_or_else(|| "no instance in its registrations".to_owned())
    })
    .await;
    let job = |name: &str| json!({"group": app, "handler": "sleepJobHandler", "retry_count": 1, "description": name});
    let (early_job, late_job) = (e.job(job("early")).await, e.job(job("late")).await);
    let early = trigger(&e, early_job, "20").await;
    e.wait_run(early, 30, "the early run accepted", accepted).await;
    // Past the margin (the executor timeout, 2 s here, plus 1 s).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let late = trigger(&e, late_job, "10").await;
    e.wait_run(late, 30, "the late run accepted", accepted).await;

    executor.kill_9();
    let killed_at = now_ms();
    let _executor = chime_executor(&e.prefix, app, port, dir.path());
    let second = common::eventually(30, "the admin to hear the new process", || async {
        match directory.executor_process(app, &address) {
            Some(p) if p.started_at > first.started_at => Ok(p),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    for (run, job) in [(early, early_job), (late, late_job)] {
        let failed = e
            .wait_run(run, 120, "the run of the killed process failed", handled)
            .await;
        let msg = failed["handle_msg"].as_str().unwrap_or_default();
        assert_eq!(failed["status"], "failed", "{failed:#}");
        assert!(msg.starts_with(JOB_RESULT_LOST), "failed as lost: {failed:#}");
        let triggered_at = failed["triggered_at"].as_i64().unwrap();
        if run == early {
            assert!(msg.contains("restarted"), "for the restart: {failed:#}");
        }
        let handled_at = failed["handled_at"].as_i64().unwrap();
        println!(
            "{kind:?}: Chime executor restarted: run sent {} ms before the new process started failed {} ms \
             after the kill, {} ms after it was sent: {msg}",
            second.started_at - triggered_at,
            handled_at - killed_at,
            handled_at - triggered_at,
        );
        let runs = e
            .api
            .wait_runs(job, 60, "the retry to finish", |r| {
                r.len() == 2 && r.iter().all(handled)
            })
            .await;
        let retry = runs.iter().find(|r| r["trigger_type"] == "RETRY").expect("a retry");
        assert_eq!(
            retry["status"], "success",
            "the retry ran on the new process: {retry:#}"
        );
        assert_eq!(retry["executor_address"], address.as_str());
    }
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_chime_executor_s_runs_are_retried_sqlite() {
    a_restarted_chime_executor_s_runs_are_retried(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_chime_executor_s_runs_are_retried_mariadb() {
    a_restarted_chime_executor_s_runs_are_retried(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_chime_executor_s_runs_are_retried_postgres() {
    a_restarted_chime_executor_s_runs_are_retried(Db::Postgres).await;
}

/// pyxxl beats every 10 s: a dead timeout of 40 s keeps a live one listed on a loaded machine.
const PYXXL_DEAD_TIMEOUT: Duration = Duration::from_secs(40);

/// A pyxxl executor running a ten-second run is killed and started again at once: the new
/// process says twice that it does not have the job, so the run is failed and retried there.
async fn a_restarted_pyxxl_executor_s_run_is_retried(kind: Db) {
    let e = start(kind, PYXXL_DEAD_TIMEOUT, Duration::from_secs(5)).await;
    let app = "pyxxl-restart";
    e.api.ok("/v1/groups", json!({ "app_name": app })).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut executor = pyxxl_executor(&e.prefix, app, port, dir.path());
    e.api.wait_executors(app, 1).await;
    let job = e
        .job(json!({"group": app, "handler": "slowJob", "retry_count": 1}))
        .await;
    let run = trigger(&e, job, "10").await;
    e.wait_run(run, 30, "the run accepted", accepted).await;

    executor.kill_9();
    let killed_at = now_ms();
    let _executor = pyxxl_executor(&e.prefix, app, port, dir.path());

    let failed = e
        .wait_run(run, 120, "the run of the killed process failed", handled)
        .await;
    let msg = failed["handle_msg"].as_str().unwrap_or_default();
    assert_eq!(failed["status"], "failed", "{failed:#}");
    assert!(
        msg.starts_with(JOB_RESULT_LOST) && msg.contains("said twice"),
        "failed as lost because the new process does not have it: {failed:#}"
    );
    let handled_at = failed["handled_at"].as_i64().unwrap();
    println!(
        "{kind:?}: pyxxl executor restarted: run failed {} ms after the kill, {} ms after it was sent",
        handled_at - killed_at,
        handled_at - failed["triggered_at"].as_i64().unwrap()
    );
    let runs = e
        .api
        .wait_runs(job, 60, "the retry to finish", |r| {
            r.len() == 2 && r.iter().all(handled)
        })
        .await;
    let retry = runs.iter().find(|r| r["trigger_type"] == "RETRY").expect("a retry");
    assert_eq!(
        (retry["status"].as_str(), retry["handle_msg"].as_str()),
        (Some("success"), Some("slept")),
        "the retry ran on the new process: {retry:#}"
    );
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_pyxxl_executor_s_run_is_retried_sqlite() {
    a_restarted_pyxxl_executor_s_run_is_retried(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_pyxxl_executor_s_run_is_retried_mariadb() {
    a_restarted_pyxxl_executor_s_run_is_retried(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_pyxxl_executor_s_run_is_retried_postgres() {
    a_restarted_pyxxl_executor_s_run_is_retried(Db::Postgres).await;
}

/// A SERIAL_EXECUTION run queued behind a 25-second one waits there longer than the sweep's
/// minimum age (13 s here) plus two idle answers 3 s apart: the executor answers busy for the
/// job all along, so neither run is taken for lost, and both succeed.
async fn a_queued_run_is_not_lost(kind: Db) {
    let e = start(kind, PYXXL_DEAD_TIMEOUT, Duration::from_secs(3)).await;
    let app = "pyxxl-serial";
    e.api.ok("/v1/groups", json!({ "app_name": app })).await;
    let dir = tempfile::tempdir().unwrap();
    let _executor = pyxxl_executor(&e.prefix, app, free_port(), dir.path());
    e.api.wait_executors(app, 1).await;
    let job = e
        .job(json!({"group": app, "handler": "slowJob", "block_strategy": "SERIAL_EXECUTION", "retry_count": 1}))
        .await;
    let long = trigger(&e, job, "25").await;
    e.wait_run(long, 30, "the long run accepted", accepted).await;
    let queued = trigger(&e, job, "1").await;
    let r = e.wait_run(queued, 30, "the queued run accepted", accepted).await;
    assert!(
        r["trigger_msg"].as_str().unwrap_or_default().contains("in queue"),
        "the executor queued it: {r:#}"
    );
    let runs = e
        .api
        .wait_runs(job, 90, "both runs to finish", |r| {
            r.iter().filter(|r| handled(r)).count() >= 2
        })
        .await;
    assert_eq!(runs.len(), 2, "no retry: nothing failed: {runs:#?}");
    for r in &runs {
        assert_eq!(
            (r["status"].as_str(), r["handle_msg"].as_str()),
            (Some("success"), Some("slept")),
            "{r:#}"
        );
    }
    let queued = e.run(queued).await;
    println!(
        "{kind:?}: the queued run waited {} ms for its result and was not taken for lost",
        queued["handled_at"].as_i64().unwrap() - queued["triggered_at"].as_i64().unwrap()
    );
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_queued_run_is_not_lost_sqlite() {
    a_queued_run_is_not_lost(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_queued_run_is_not_lost_mariadb() {
    a_queued_run_is_not_lost(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_queued_run_is_not_lost_postgres() {
    a_queued_run_is_not_lost(Db::Postgres).await;
}
