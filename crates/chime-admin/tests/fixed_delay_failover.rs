//! `FIX_DELAY` across a `kill -9`: two real `chime admin` processes share PostgreSQL, and the
//! one holding the job's partition is killed while a run is under way. The other takes the partition over; the run's result reaches it; its claim loop computes the
//! next fire from the database (the end plus the delay, to the millisecond) and the chain goes
//! on: every fire after the kill too, one run at a time, each received once.

mod common;

use common::cluster::{node_name, now_ms, Admin};
use common::executor::TestExecutor;
use common::process::free_port;
use common::{eventually, Db, TestDb, ACCESS_TOKEN};
use serde_json::{json, Value};
use sqlx::{Connection, Row};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

const DELAY_MS: i64 = 1_000;
const RUN_MS: i64 = 1_500;

/// The node holding lease `partition` now.
async fn holder(db_url: &str, partition: i64) -> String {
    let mut conn = sqlx::AnyConnection::connect(db_url).await.unwrap();
    let row = sqlx::query(&format!(
        "SELECT owner FROM partition_lease WHERE partition_no = {partition}"
    ))
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let owner = row
        .try_get::<String, _>("owner")
        .unwrap_or_else(|_| String::from_utf8(row.try_get::<Vec<u8>, _>("owner").unwrap()).unwrap());
    conn.close().await.unwrap();
    owner
}

async fn a_fixed_delay_survives_the_kill_of_its_admin(kind: Db) {
    let db = TestDb::new(kind).await;
    sqlx::any::install_default_drivers();
    let dir = tempfile::tempdir().unwrap();
    let bin = common::chime_binary();
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(1))
        .no_proxy()
        .build()
        .unwrap();
    let mut admins: Vec<Admin> = Vec::new();
    for k in 0..2 {
        let node = node_name(k);
        let at = (IpAddr::V4(Ipv4Addr::LOCALHOST), free_port());
        admins.push(Admin::start(
            &bin,
            &db.url,
            &node,
            at,
            None,
            &dir.path().join(format!("{node}.log")),
        ));
        let admin = &admins[k];
        eventually(60, &format!("{node} holds partitions"), || async {
            match admin.partitions(&http).await {
                Some(n) if n > 0 => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
    let api = admins[0].api();
    api.ok("/v1/groups", json!({ "app_name": "delayed" })).await;
    let job: Value = api
        .ok(
            "/v1/jobs",
            json!({"group": "delayed", "handler": "sleep", "param": RUN_MS.to_string(),
                   "schedule_type": "FIX_DELAY", "schedule_expr": "1"}),
        )
        .await;
    let (id, partition) = (job["id"].as_i64().unwrap(), job["partition"].as_i64().unwrap());
    // The executor reports to the admin that will survive: the one not holding the job.
    let doomed = holder(&db.url, partition).await;
    let (kill, keep) = if doomed == admins[0].node { (0, 1) } else { (1, 0) };
    assert_eq!(admins[kill].node, doomed, "one of the two holds partition {partition}");
    let survivor = admins[keep].api();
    let base = format!("http://127.0.0.1:{}/xxl-job-admin", admins[keep].port);
    let ex = TestExecutor::start(&base, "delayed", ACCESS_TOKEN).await;
    survivor.wait_executors("delayed", 1).await;
    admins[kill].api().wait_executors("delayed", 1).await;
    survivor.ok(&format!("/v1/jobs/{id}/start"), json!({})).await;

    // Three runs, then the holder dies while the fourth is under way.
    eventually(60, "three runs received", || async {
        let n = ex.run_count();
        if n >= 4 {
            Ok(())
        } else {
            Err(format!("{n} received"))
        }
    })
    .await;
    admins[kill].signal(libc::SIGKILL);
    let killed_at = now_ms();
    let runs = survivor
        .wait_runs(id, 90, "four runs sent after the kill", |runs| {
            runs.iter()
                .filter(|r| r["status"] == "success" && r["triggered_at"].as_i64().unwrap() > killed_at)
                .count()
                >= 4
        })
        .await;
    survivor.ok(&format!("/v1/jobs/{id}/stop"), json!({})).await;

    let mut done: Vec<&Value> = runs.iter().filter(|r| r["status"] == "success").collect();
    done.sort_by_key(|r| r["id"].as_i64());
    for pair in done.windows(2) {
        let (prev, next) = (pair[0], pair[1]);
        assert_eq!(next["trigger_type"], "CRON", "{kind:?}: {next}");
        assert_eq!(
            next["scheduled_at"].as_i64().unwrap(),
            prev["handled_at"].as_i64().unwrap() + DELAY_MS,
            "{kind:?}: the fire after run {} is its end plus the delay: {prev} then {next}",
            prev["id"]
        );
    }
    let received = ex.log_ids();
    let once: HashSet<i64> = received.iter().copied().collect();
    assert_eq!(
        once.len(),
        received.len(),
        "{kind:?}: a run was received twice: {received:?}"
    );
    assert_eq!(ex.seen.lock().unwrap().slow_most, 1, "{kind:?}: runs overlapped");
    ex.kill();
    drop(admins);
    db.drop_db().await;
}

#[tokio::test]
async fn a_fixed_delay_survives_the_kill_of_its_admin_postgres() {
    a_fixed_delay_survives_the_kill_of_its_admin(Db::Postgres).await;
}
