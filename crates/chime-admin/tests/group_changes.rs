//! A group created or changed through one admin is known to the others at once, not at their
//! next registry refresh:
//!
//! - every change to a group raises the version in `group_change`, which each admin reads every
//!   500 ms (an admin here refreshes only hourly, so nothing else could tell it);
//! - a send that meets a group or an executor the admin does not know reloads the directory
//!   before failing the run — one reload for a burst of unknown groups, at most one a second for
//!   a group that stays without executors;
//! - two real `chime admin` processes on PostgreSQL and MariaDB with the default 5 s refresh: a
//!   group and 40 jobs firing every second created through one, the first seconds' fires claimed
//!   by the other, and none fails.

mod common;

use chime_admin::model::GroupSpec;
use chime_admin::store::{ApplyOptions, JobsDocument, Store};
use common::admin_process::AdminProcess;
use common::demo_executor::DemoExecutor;
use common::executor::TestExecutor;
use common::{Api, Db, TestDb, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// An admin in the test process that reloads the registry only hourly.
async fn admin_refreshing_hourly(db: &TestDb) -> chime_admin::AdminHandle {
    let mut config = common::config(&db.url);
    config.registry_refresh = Duration::from_secs(3600);
    chime_admin::start(config).await.expect("admin starts")
}

/// Another admin's writes, as they reach the database: a store of its own.
async fn other_admin(db: &TestDb) -> Store {
    Store::connect(&db.url).await.unwrap()
}

async fn changes_are_seen_without_a_refresh(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = admin_refreshing_hourly(&db).await;
    let directory = handle.admin.directory.clone();
    let other = other_admin(&db).await;
    let spec = |title: &str| {
        GroupSpec {
            app_name: Some("elsewhere".into()),
            title: Some(title.into()),
            ..Default::default()
        }
        .validate(None, &Default::default())
        .unwrap()
    };
    let group = other.insert_group(&spec("made elsewhere")).await.unwrap();
    common::eventually(10, "the group created elsewhere known", || async {
        directory.group(group.id).map(|_| ()).ok_or("not known".to_owned())
    })
    .await;
    other.update_group(group.id, &spec("changed elsewhere")).await.unwrap();
    common::eventually(10, "the change made elsewhere known", || async {
        match directory.group(group.id) {
            Some(g) if g.title == "changed elsewhere" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    other.delete_group(group.id).await.unwrap();
    common::eventually(10, "the group deleted elsewhere gone", || async {
        match directory.group(group.id) {
            None => Ok(()),
            Some(g) => Err(format!("{g:?}")),
        }
    })
    .await;
    other.close().await;
    handle.shutdown().await;
    db.drop_db().await;
}

#[tokio::test]
async fn changes_are_seen_without_a_refresh_sqlite() {
    changes_are_seen_without_a_refresh(Db::Sqlite).await;
}

#[tokio::test]
async fn changes_are_seen_without_a_refresh_mariadb() {
    changes_are_seen_without_a_refresh(Db::MySql).await;
}

#[tokio::test]
async fn changes_are_seen_without_a_refresh_postgres() {
    changes_are_seen_without_a_refresh(Db::Postgres).await;
}

async fn every_change_raises_the_version(kind: Db) {
    let db = TestDb::new(kind).await;
    let store = other_admin(&db).await;
    let v0 = store.group_change_version().await.unwrap();
    let group = common::insert_manual_group(&store, "versioned").await;
    let v1 = store.group_change_version().await.unwrap();
    let mut draft = GroupSpec::default()
        .validate(Some(&group), &Default::default())
        .unwrap();
    draft.title = "renamed".into();
    store.update_group(group.id, &draft).await.unwrap();
    let v2 = store.group_change_version().await.unwrap();
    // Refused changes raise nothing: an app name taken, a group that does not exist.
    let taken = common::insert_manual_group(&store, "taken").await;
    let v3 = store.group_change_version().await.unwrap();
    draft.app_name = "taken".into();
    assert!(store.update_group(group.id, &draft).await.is_err());
    assert!(store.update_group(taken.id + 100, &draft).await.is_err());
    assert_eq!(store.group_change_version().await.unwrap(), v3, "{kind:?}");
    store.delete_group(taken.id).await.unwrap();
    let v4 = store.group_change_version().await.unwrap();
    assert_eq!([v1, v2, v3, v4], [v0 + 1, v0 + 2, v0 + 3, v0 + 4], "{kind:?}");
    // Jobs as code (and an import, which applies the same plan): in its transaction too, once
    // per group it creates or changes, and not at all for a dry run.
    let doc: JobsDocument = serde_json::from_value(json!({"groups": [
        {"app_name": "as-code", "title": "from a document", "jobs": []},
        {"app_name": "versioned", "title": "renamed by a document", "jobs": []}
    ]}))
    .unwrap();
    let networks = Default::default();
    let opts = |dry_run| ApplyOptions {
        networks: &networks,
        default_zone: "UTC",
        author: "test",
        dry_run,
        prune: false,
    };
    store.apply_jobs(&doc, opts(true)).await.unwrap();
    assert_eq!(store.group_change_version().await.unwrap(), v4, "{kind:?}: a dry run");
    store.apply_jobs(&doc, opts(false)).await.unwrap();
    assert_eq!(store.group_change_version().await.unwrap(), v4 + 2, "{kind:?}");
    store.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn every_change_raises_the_version_sqlite() {
    every_change_raises_the_version(Db::Sqlite).await;
}

#[tokio::test]
async fn every_change_raises_the_version_mariadb() {
    every_change_raises_the_version(Db::MySql).await;
}

#[tokio::test]
async fn every_change_raises_the_version_postgres() {
    every_change_raises_the_version(Db::Postgres).await;
}

/// Inserts a group row the way a writer that does not raise the version would (an older admin,
/// an operator's SQL): only a reload for an unknown group can tell the admin.
async fn insert_unannounced_group(db: &TestDb, app: &str, addresses: &str) -> i64 {
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    let (manual, list) = if addresses.is_empty() { (0, "") } else { (1, addresses) };
    let q = match db.kind {
        Db::Postgres => "INSERT INTO executor_group (app_name, title, address_type, address_list, protocol, keep_logs, created_at, updated_at) VALUES ($1, $1, $2, $3, 'G2', 1, 0, 0) RETURNING id",
        _ => "INSERT INTO executor_group (app_name, title, address_type, address_list, protocol, keep_logs, created_at, updated_at) VALUES (?, ?, ?, ?, 'G2', 1, 0, 0) RETURNING id",
    };
    let mut query = sqlx::query(q).bind(app);
    if db.kind != Db::Postgres {
        query = query.bind(app);
    }
    let row = query.bind(manual).bind(list).fetch_one(&pool).await.unwrap();
    pool.close().await;
    sqlx::Row::get::<i64, _>(&row, 0)
}

async fn a_run_of_an_unknown_group(api: &Api, group: i64, handler: &str) -> i64 {
    let job = api.ok("/v1/jobs", json!({"group_id": group, "handler": handler})).await["id"]
        .as_i64()
        .unwrap();
    api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap()
}

async fn run(api: &Api, id: i64) -> Value {
    let (s, v) = api.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(s, 200, "{v}");
    v
}

async fn ended(api: &Api, id: i64) -> Value {
    common::eventually(30, "the run to end", || async {
        let r = run(api, id).await;
        if matches!(r["status"].as_str(), Some("pending" | "running")) || r["trigger_code"] == 0 {
            Err(format!("{r:#}"))
        } else {
            Ok(r)
        }
    })
    .await
}

async fn sends_reload_unknown_groups_once(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = admin_refreshing_hourly(&db).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}/xxl-job-admin", handle.local_addr);
    let directory = handle.admin.directory.clone();
    let ex = TestExecutor::start(&base, "listed", ACCESS_TOKEN).await;
    // Twenty groups the admin has not heard of, each listing the executor by hand, and then a
    // run of each: all sent, after one reload (two if a run met its group unknown while the
    // first was being made). The groups are all written before the first run, so a reload can
    // only find all of them or none.
    let mut groups = Vec::new();
    for k in 0..20 {
        groups.push(insert_unannounced_group(&db, &format!("unannounced-{k}"), &ex.address).await);
    }
    let mut runs = Vec::new();
    for group in groups {
        runs.push(a_run_of_an_unknown_group(&api, group, "ok").await);
    }
    for id in &runs {
        let r = ended(&api, *id).await;
        assert_eq!(
            r["status"], "success",
            "{kind:?}: a run of a group made elsewhere: {r:#}"
        );
    }
    let reloads = directory.unknown_reloads();
    assert!(
        (1..=2).contains(&reloads),
        "{kind:?}: {reloads} reloads for 20 unknown groups"
    );

    // A group that stays without executors: its runs fail ("registry address is empty"), and
    // however many there are, at most about one reload a second is made for them.
    let empty = insert_unannounced_group(&db, "nobody-registers", "").await;
    let before = directory.unknown_reloads();
    let started = Instant::now();
    let mut runs = Vec::new();
    for _ in 0..30 {
        runs.push(a_run_of_an_unknown_group(&api, empty, "ok").await);
    }
    for id in &runs {
        let r = ended(&api, *id).await;
        assert_eq!(r["status"], "failed", "{r:#}");
        assert!(
            r["trigger_msg"]
                .as_str()
                .unwrap_or_default()
                .contains("registry address is empty"),
            "{r:#}"
        );
    }
    let reloads = directory.unknown_reloads() - before;
    let seconds = started.elapsed().as_secs() + 1;
    assert!(
        reloads <= seconds + 1,
        "{kind:?}: {reloads} reloads for 30 runs of a group without executors within {seconds} s"
    );
    ex.kill();
    handle.shutdown().await;
    db.drop_db().await;
}

#[tokio::test]
async fn sends_reload_unknown_groups_once_sqlite() {
    sends_reload_unknown_groups_once(Db::Sqlite).await;
}

#[tokio::test]
async fn sends_reload_unknown_groups_once_mariadb() {
    sends_reload_unknown_groups_once(Db::MySql).await;
}

#[tokio::test]
async fn sends_reload_unknown_groups_once_postgres() {
    sends_reload_unknown_groups_once(Db::Postgres).await;
}

/// Jobs created by [`a_new_group_fires_at_once_on_every_admin`].
const JOBS: usize = 40;

/// Two real admins sharing `kind` with the default refresh (5 s); Chime's executor registered
/// with both before its group exists. The group and 40 jobs firing every second are created
/// through the first; the second claims about half of the fires from the first second on, and
/// no run fails.
async fn a_new_group_fires_at_once_on_every_admin(kind: Db) {
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let a = AdminProcess::start(&db.url, "a", &[], dir.path(), false);
    assert_eq!(a.wait_ready().await, 16);
    let b = AdminProcess::start(&db.url, "b", &[], dir.path(), false);
    b.wait_ready().await;
    common::eventually(60, "the two admins to share the partitions", || async {
        let shares = (a.partitions().await?, b.partitions().await?);
        (shares.0 >= 1 && shares.1 >= 1 && shares.0 + shares.1 == 16)
            .then_some(())
            .ok_or(format!("{shares:?}"))
    })
    .await;
    let app = "fresh";
    let executor = DemoExecutor::start(&format!("{},{}", a.base(), b.base()), app);
    common::eventually(60, "the executor registered", || async {
        registered(&db, app, &executor.address)
            .await
            .then_some(())
            .ok_or("no registration yet".to_owned())
    })
    .await;
    // Past a refresh of both admins (5 s): each knows the executor, from its registration or
    // from the database, and only its group is new to them.
    tokio::time::sleep(Duration::from_secs(6)).await;

    let api = a.api();
    let created = Instant::now();
    api.ok("/v1/groups", json!({"app_name": app})).await;
    let mut jobs = Vec::new();
    for _ in 0..JOBS {
        let v = api
            .ok(
                "/v1/jobs",
                json!({"group": app, "handler": "demoJobHandler", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "running": true}),
            )
            .await;
        jobs.push(v["id"].as_i64().unwrap());
    }
    eprintln!(
        "{kind:?}: group and {JOBS} jobs created in {} ms",
        created.elapsed().as_millis()
    );
    tokio::time::sleep(Duration::from_secs(4)).await;
    for id in &jobs {
        api.ok(&format!("/v1/jobs/{id}/stop"), json!({})).await;
    }
    let (mut by_b, mut total) = (0, 0);
    let mut failed = Vec::new();
    for id in &jobs {
        let runs = api
            .wait_runs(*id, 60, "the runs to end", |r| {
                r.iter()
                    .all(|r| !matches!(r["status"].as_str(), Some("pending" | "running")))
            })
            .await;
        assert!(!runs.is_empty(), "{kind:?}: job {id} fired");
        total += runs.len();
        for r in &runs {
            let msg = r["trigger_msg"].as_str().unwrap_or_default();
            by_b += usize::from(msg.contains("Admin：b<br>"));
            if r["status"] != "success" {
                failed.push(format!("{r}"));
            }
        }
    }
    eprintln!(
        "{kind:?}: {total} runs, sent by the second admin: {by_b}, failed: {}",
        failed.len()
    );
    assert!(by_b > 0, "{kind:?}: the second admin claimed some of the fires");
    assert!(
        failed.is_empty(),
        "{kind:?}: {} runs failed, e.g.:\n{}",
        failed.len(),
        failed.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
    drop(executor);
    drop((a, b));
    db.drop_db().await;
}

/// Whether the database holds a registration of `address` (with or without trailing slash) in
/// `app`.
async fn registered(db: &TestDb, app: &str, address: &str) -> bool {
    let store = Store::connect(&db.url).await.unwrap();
    let rows = store.live_registry(0).await.unwrap();
    store.close().await;
    rows.iter()
        .any(|(a, r, _)| a == app && r.trim_end_matches('/') == address)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_group_fires_at_once_on_every_admin_mariadb() {
    a_new_group_fires_at_once_on_every_admin(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_group_fires_at_once_on_every_admin_postgres() {
    a_new_group_fires_at_once_on_every_admin(Db::Postgres).await;
}
