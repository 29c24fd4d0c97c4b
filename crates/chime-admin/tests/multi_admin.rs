//! Several admins on one database: three real `chime admin` processes share PostgreSQL (and
//! MariaDB), 100 jobs fire every second with the default misfire policy (`DO_NOTHING`), lease
//! time and misfire threshold. All three hold partitions (`/healthz`) and send runs. Then one
//! admin is killed with SIGKILL (or two, one after the other), frozen with SIGSTOP for 20 s, cut
//! off the network for 20 s (it runs in a network namespace of its own), or all three are
//! restarted one by one. The others take over a lost admin's partitions once its leases lapse,
//! soon enough that no second becomes a misfire; an admin that comes back takes its share again
//! on its own; and one that could not renew sends nothing of what it had claimed.
//!
//! Each scenario is checked at the database — every second of every job has exactly one run, sent
//! as scheduled and successful — and at the executor, keyed by job and scheduled second: every
//! second was received exactly once (see `common::cluster`).

mod common;

use common::cluster::{now_ms, shared_by_all, Check, Cluster, Netns};
use common::{Db, TestDb};
use serde_json::Value;
use std::time::Duration;

/// How long the freeze and the network cut last: ten lease times.
const OUTAGE: Duration = Duration::from_secs(20);

/// Sleeps until `OUTAGE` after `since` (epoch ms).
async fn until_outage_over(since: i64) {
    let left = (since + OUTAGE.as_millis() as i64 - now_ms()).max(0);
    tokio::time::sleep(Duration::from_millis(left as u64)).await;
}

/// One of three admins is killed: the two others hold every partition once its leases lapse.
async fn one_of_three_admins_killed(kind: Db) {
    let mut cluster = Cluster::start(kind).await;
    cluster.kill(0);
    let killed_at = now_ms();
    cluster
        .wait_shares(&[1, 2], "the two survivors to hold everything", |s| {
            s.iter().sum::<u64>() == 16
        })
        .await;
    let took_over_at = now_ms();
    eprintln!(
        "{kind:?}: the two survivors held every partition {} ms after the kill",
        took_over_at - killed_at
    );
    cluster
        .finish(Check {
            scenario: "one of three killed",
            from: killed_at,
            to: took_over_at,
            may_skip: None,
            silent: None,
        })
        .await;
}

/// The first of three admins is killed, then, once the two others share everything, the
/// second: the third ends up with every partition, and still no second is skipped or doubled.
async fn two_of_three_admins_killed_one_after_the_other(kind: Db) {
    let mut cluster = Cluster::start(kind).await;
    cluster.kill(0);
    let first_killed_at = now_ms();
    cluster
        .wait_shares(&[1, 2], "the two survivors to hold everything", |s| {
            s.iter().sum::<u64>() == 16
        })
        .await;
    eprintln!(
        "{kind:?}: the two survivors held every partition {} ms after the first kill",
        now_ms() - first_killed_at
    );
    // Let the survivors run on their new shares before the next kill.
    tokio::time::sleep(Duration::from_secs(3)).await;
    cluster.kill(1);
    let second_killed_at = now_ms();
    cluster
        .wait_shares(&[2], "the last admin to hold everything", |s| s[0] == 16)
        .await;
    let took_over_at = now_ms();
    eprintln!(
        "{kind:?}: the last admin held every partition {} ms after the second kill",
        took_over_at - second_killed_at
    );
    cluster
        .finish(Check {
            scenario: "two of three killed",
            from: first_killed_at,
            to: took_over_at,
            may_skip: None,
            silent: None,
        })
        .await;
}

/// Three admins restarted one by one (SIGTERM, start again with the same node id), each waiting
/// until the three share every partition again: no second skipped, lost or doubled.
async fn a_rolling_restart_of_three_admins(kind: Db) {
    let mut cluster = Cluster::start(kind).await;
    let started_at = restart_one_by_one(&mut cluster).await;
    finish(cluster, "rolling restart", started_at).await;
}

/// The previous release's schema: its migrations are those numbered below this one.
const PREVIOUS_RELEASE_SCHEMA: i64 = 19;

/// Jobs the previous release's admin had defined, written in its schema.
const LEGACY_JOBS: i64 = 20;

/// An upgrade: the database holds the previous release's schema and its jobs; the three admins
/// of this release start on it (the first applies the migrations since, the others wait for
/// it), their jobs fire every second, and they are restarted one by one as a rolling upgrade
/// does: no second skipped, lost or doubled, and the earlier jobs are all there afterwards.
async fn an_upgrade_by_rolling_restart(kind: Db) {
    let db = TestDb::new(kind).await;
    let mut conn = db.migrated_before(PREVIOUS_RELEASE_SCHEMA).await;
    fill_previous_release(&mut conn).await;
    drop(conn);
    let mut cluster = Cluster::start_on(db).await;
    let started_at = restart_one_by_one(&mut cluster).await;
    let api = cluster.api.clone();
    let (status, jobs) = api.get("/v1/jobs?group=legacy&limit=100").await;
    assert_eq!(status, 200, "{jobs}");
    let keys: Vec<&str> = jobs
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|j| j["key"].as_str())
        .collect();
    assert_eq!(
        keys.len() as i64,
        LEGACY_JOBS,
        "the previous release's jobs after the upgrade: {keys:?}"
    );
    assert!(keys.iter().all(|k| k.starts_with("legacy-")), "{keys:?}");
    let (_, job) = api.get(&format!("/v1/jobs/{}", jobs[0]["id"])).await;
    assert_eq!(job["description"], Value::from("legacy job 0"), "{job}");
    finish(cluster, "rolling upgrade", started_at).await;
}

/// Writes what the previous release's admin kept: a group and its jobs, in that schema.
async fn fill_previous_release(conn: &mut sqlx::AnyConnection) {
    let now = now_ms();
    sqlx::query(
        "INSERT INTO executor_group (app_name, title, created_at, updated_at) VALUES ('legacy', 'legacy', $1, $1)",
    )
    .bind(now)
    .execute(&mut *conn)
    .await
    .unwrap();
    for i in 0..LEGACY_JOBS {
        sqlx::query(
            "INSERT INTO job (group_id, description, schedule_type, time_zone, misfire_strategy, route_strategy, \
             block_strategy, glue_type, glue_updated_at, created_at, updated_at, job_key, handler) \
             SELECT id, $1, 'NONE', 'UTC', 'DO_NOTHING', 'FIRST', 'SERIAL_EXECUTION', 'BEAN', $2, $2, $2, $3, 'ok' \
             FROM executor_group WHERE app_name = 'legacy'",
        )
        .bind(format!("legacy job {i}"))
        .bind(now)
        .bind(format!("legacy-{i}"))
        .execute(&mut *conn)
        .await
        .unwrap();
    }
}

/// Restarts the three admins one by one, each when the three share every partition again;
/// returns when it began, epoch ms.
async fn restart_one_by_one(cluster: &mut Cluster) -> i64 {
    let started_at = now_ms();
    for k in 0..3 {
        let stopping = now_ms();
        cluster.restart(k).await;
        let what = format!("the partitions to be shared again after restarting admin {k}");
        cluster.wait_shares(&[0, 1, 2], &what, shared_by_all).await;
        eprintln!(
            "{:?}: admin {k} restarted and the three shared everything again after {} ms",
            cluster.kind,
            now_ms() - stopping
        );
    }
    started_at
}

/// Stops the cluster and checks every second of its jobs since `started_at`: none skipped, lost
/// or doubled.
async fn finish(cluster: Cluster, scenario: &'static str, started_at: i64) {
    let done_at = now_ms();
    cluster
        .finish(Check {
            scenario,
            from: started_at,
            to: done_at,
            may_skip: None,
            silent: None,
        })
        .await;
}

/// A frozen admin (SIGSTOP) loses its partitions to the two others; when it runs again
/// (SIGCONT) it sends nothing of what it had claimed for them — its deadline passed while it was
/// stopped — and takes its share again.
async fn a_frozen_admin_sends_nothing_stale(kind: Db) {
    let mut cluster = Cluster::start(kind).await;
    cluster.admins[0].signal(libc::SIGSTOP);
    let stopped_at = now_ms();
    cluster
        .wait_shares(&[1, 2], "the two others to take over", |s| s.iter().sum::<u64>() == 16)
        .await;
    eprintln!(
        "{kind:?}: the two others held every partition {} ms after SIGSTOP",
        now_ms() - stopped_at
    );
    // Long enough for the frozen admin's timer to hold runs due while it was stopped, and for
    // the others to send them.
    until_outage_over(stopped_at).await;
    cluster.admins[0].signal(libc::SIGCONT);
    let continued_at = now_ms();
    cluster
        .wait_shares(&[0, 1, 2], "the woken admin to take its share again", shared_by_all)
        .await;
    let resumed_at = now_ms();
    eprintln!(
        "{kind:?}: the woken admin held its share again {} ms after SIGCONT",
        resumed_at - continued_at
    );
    cluster
        .finish(Check {
            scenario: "frozen 20 s",
            from: stopped_at,
            to: resumed_at,
            may_skip: None,
            silent: None,
        })
        .await;
}

/// An admin cut off the network for 20 s (its namespace's link down): the two others take its
/// partitions over within a few lease times; it sends nothing while it cannot renew, nor, once
/// the link is back, anything it had claimed before the cut; and it takes its share again on
/// its own.
async fn a_network_cut(kind: Db) {
    let netns = Netns::create(kind);
    let mut cluster = Cluster::start_with_netns(kind, netns).await;
    let cut_off = cluster.admins[0].ip;
    cluster.netns().cut();
    let cut_at = now_ms();
    cluster
        .wait_shares(&[1, 2], "the two others to take over", |s| s.iter().sum::<u64>() == 16)
        .await;
    eprintln!(
        "{kind:?}: the two others held every partition {} ms after the cut",
        now_ms() - cut_at
    );
    until_outage_over(cut_at).await;
    cluster.netns().restore();
    let restored_at = now_ms();
    cluster
        .wait_shares(
            &[0, 1, 2],
            "the reconnected admin to take its share again",
            shared_by_all,
        )
        .await;
    let resumed_at = now_ms();
    eprintln!(
        "{kind:?}: the reconnected admin held its share again {} ms after the link came back",
        resumed_at - restored_at
    );
    cluster
        .wait_every_admin_sends(&[0], resumed_at, "after the link came back")
        .await;
    cluster
        .finish(Check {
            scenario: "network cut 20 s",
            from: cut_at,
            to: resumed_at,
            may_skip: None,
            // A run due during the cut that still reached the executor from the namespace was
            // sent after the admin had lost its lease (a send queued in the kernel, or one
            // started after the link came back).
            silent: Some((cut_off, cut_at + 1000, restored_at)),
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_of_three_killed_postgres() {
    one_of_three_admins_killed(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_of_three_killed_mysql() {
    one_of_three_admins_killed(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_of_three_killed_postgres() {
    two_of_three_admins_killed_one_after_the_other(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_of_three_killed_mysql() {
    two_of_three_admins_killed_one_after_the_other(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_restart_postgres() {
    a_rolling_restart_of_three_admins(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_upgrade_postgres() {
    an_upgrade_by_rolling_restart(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_restart_mysql() {
    a_rolling_restart_of_three_admins(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn frozen_admin_postgres() {
    a_frozen_admin_sends_nothing_stale(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn frozen_admin_mysql() {
    a_frozen_admin_sends_nothing_stale(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn network_cut_postgres() {
    a_network_cut(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn network_cut_mysql() {
    a_network_cut(Db::MySql).await;
}
