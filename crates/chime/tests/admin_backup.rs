//! `chime admin backup --to FILE` as an operator runs it: on the SQLite database of an admin
//! that keeps firing meanwhile, a copy that an admin started on it serves again, with every
//! group, job and run recorded before the backup; a backup never overwrites a file, and for
//! PostgreSQL and MariaDB the command points at their own dump tools.

mod common;
use common::admin::{start_admin, API_TOKEN};
use common::BIN;
use serde_json::{json, Value};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Generous: the test polls for outcomes and never asserts on speed.
const WAIT: Duration = Duration::from_secs(60);

fn backup(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["admin", "backup"])
        .args(args)
        .env_remove("CHIME_DB")
        .env_remove("CHIME_CONFIG")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `method path` on the REST API of the admin at `base`, with its token; status and body.
async fn call(base: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .bearer_auth(API_TOKEN);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn get(base: &str, path: &str) -> Value {
    let (status, v) = call(base, reqwest::Method::GET, path, None).await;
    assert_eq!(status, 200, "GET {path}: {v}");
    v
}

/// The ids of the runs the admin at `base` has recorded (up to 10,000).
async fn run_ids(base: &str) -> Vec<i64> {
    let runs = get(base, "/v1/runs?limit=10000").await;
    runs.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_the_admin_fires_restores_everything_recorded_before_it() {
    use reqwest::Method;
    let dir = tempfile::tempdir().unwrap();
    let live_db = format!("sqlite://{}/live.db", dir.path().display());
    let admin = start_admin(&live_db, "backup-password-1");
    let base = admin.url.clone();

    let (s, group) = call(&base, Method::POST, "/v1/groups", Some(json!({"app_name": "billing"}))).await;
    assert_eq!(s, 201, "{group}");
    let mut jobs = Vec::new();
    for handler in ["invoice", "report"] {
        let (s, job) = call(
            &base,
            Method::POST,
            "/v1/jobs",
            Some(json!({"group": "billing", "handler": handler, "schedule_type": "NONE"})),
        )
        .await;
        assert_eq!(s, 201, "{job}");
        jobs.push(job["id"].as_i64().unwrap());
    }
    // A job firing every second keeps the admin writing while the backup is taken (its runs
    // fail: no executor serves the group, which records them all the same).
    let (s, ticking) = call(
        &base,
        Method::POST,
        "/v1/jobs",
        Some(json!({"group": "billing", "handler": "tick", "schedule_type": "FIX_RATE", "schedule_expr": "1"})),
    )
    .await;
    assert_eq!(s, 201, "{ticking}");
    let ticking = ticking["id"].as_i64().unwrap();
    jobs.push(ticking);
    let (s, v) = call(&base, Method::POST, &format!("/v1/jobs/{ticking}/start"), None).await;
    assert_eq!(s, 200, "{v}");
    for &job in &jobs[..2] {
        let (s, v) = call(&base, Method::POST, &format!("/v1/jobs/{job}/trigger"), Some(json!({}))).await;
        assert_eq!(s, 202, "{v}");
    }
    let deadline = Instant::now() + WAIT;
    while run_ids(&base).await.len() < 4 {
        assert!(Instant::now() < deadline, "the admin records no fires");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let before = run_ids(&base).await;
    let copy = dir.path().join("chime-backup.db");
    let out = backup(&["--db", &live_db, "--to", copy.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The admin went on firing during and after the backup.
    let deadline = Instant::now() + WAIT;
    while run_ids(&base).await.len() <= before.len() + 1 {
        assert!(Instant::now() < deadline, "the admin stopped firing after the backup");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A second backup to the same file is refused, and the copy is untouched.
    let size = std::fs::metadata(&copy).unwrap().len();
    let out = backup(&["--db", &live_db, "--to", copy.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("already exists"), "{}", text(&out.stderr));
    assert_eq!(std::fs::metadata(&copy).unwrap().len(), size);
    drop(admin);

    // The copy is a sound database on its own (no -wal file beside it).
    {
        use sqlx::Connection;
        assert!(!dir.path().join("chime-backup.db-wal").exists());
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}?mode=ro", copy.display()))
            .await
            .unwrap();
        let (check,): (String,) = sqlx::query_as("PRAGMA integrity_check")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(check, "ok");
        conn.close().await.unwrap();
    }

    let restored = start_admin(&format!("sqlite://{}", copy.display()), "ignored-now-1");
    let groups = get(&restored.url, "/v1/groups").await;
    assert!(
        groups.as_array().unwrap().iter().any(|g| g["app_name"] == "billing"),
        "{groups}"
    );
    for job in &jobs {
        get(&restored.url, &format!("/v1/jobs/{job}")).await;
    }
    for run in &before {
        let r = get(&restored.url, &format!("/v1/runs/{run}")).await;
        assert_eq!(r["id"], *run, "{r}");
    }
}

#[test]
fn a_server_database_is_pointed_at_its_own_dump_tool() {
    for (url, tool) in [
        ("postgres://chime@db.example/chime", "pg_dump"),
        ("mysql://chime:secret@db.example/chime", "mariadb-dump"),
    ] {
        let out = backup(&["--db", url, "--to", "/nonexistent/copy.db"]);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains(tool), "{url}: {err}");
        assert!(!err.contains("secret"), "{err}");
    }
}
