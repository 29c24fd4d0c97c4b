//! What a run tells beyond its codes, on every database, through the real admin and a real
//! XXL-JOB executor over HTTP:
//!
//! * a run a user kills is stored as a failure (handle code 500, no retry) but shown as
//!   `killed`, with who killed it; `?status=killed` and `?status=failed` list each apart; a
//!   kill that is refused marks nothing;
//! * a retry names the run it retries (`retry_of`) and the failed run names its retry
//!   (`retried_by`);
//! * in one batch of results, failures that make retries (a failed send, a failed run) and a
//!   success that fires a child: each retry names its own failed run, the child names none;
//! * a failure for good of a job with e-mail contacts but no SMTP server ends with its alarm
//!   `failed` and the reason on the run, while the retried run's alarm is `not_needed`.

mod common;

use chime_admin::model::JobSpec;
use chime_admin::store::{HandleOutcome, NewRun, Store, TriggerOutcome};
use chime_protocol::TriggerType;
use common::executor::TestExecutor;
use common::{status, Api, Db, TestDb, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn run(api: &Api, id: i64) -> Value {
    let (s, v) = api.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(s, 200, "{v}");
    v
}

/// Ids of the runs `?status=…` lists for `job`.
async fn listed(api: &Api, job: i64, state: &str) -> Vec<i64> {
    let (s, v) = api.get(&format!("/v1/runs?job_id={job}&status={state}")).await;
    assert_eq!(s, 200, "{v}");
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

async fn scenario(kind: Db) {
    let db = TestDb::new(kind).await;
    // No SMTP server and no webhook: the admin's test settings.
    let admin = common::start_admin(&db.url).await;
    let api = Api::new(admin.local_addr);
    let prefix = format!("http://{}/xxl-job-admin", admin.local_addr);
    api.ok("/v1/groups", json!({"app_name": "details"})).await;
    let ex = TestExecutor::start(&prefix, "details", ACCESS_TOKEN).await;
    api.wait_executors("details", 1).await;

    // Kill: a hanging run is killed; the executor accepted it.
    let hang = api
        .ok(
            "/v1/jobs",
            json!({"group": "details", "handler": "hang", "schedule_type": "NONE", "retry_count": 3}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let hung = api.ok(&format!("/v1/jobs/{hang}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap();
    api.wait_runs(hang, 30, "the hanging run accepted", |r| {
        r.len() == 1 && status(&r[0]) == "running"
    })
    .await;
    assert_eq!(run(&api, hung).await["killed_by"], Value::Null);
    let (s, v) = api.post(&format!("/v1/runs/{hung}/kill"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["status"], "killed", "{v}");
    assert_eq!(v["handle_code"], 500, "stored as the failure executors report: {v}");
    assert_eq!(v["killed_by"], "api-token", "{v}");
    // As before: no retry, although the job has retries left.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let runs = api.runs(hang).await;
    assert_eq!(runs.len(), 1, "a killed run is not retried: {runs:#?}");
    assert_eq!(runs[0]["status"], "killed");
    assert_eq!(listed(&api, hang, "killed").await, vec![hung]);
    assert!(
        listed(&api, hang, "failed").await.is_empty(),
        "killed runs are not listed as failed"
    );
    // A kill refused (the run is no longer running) marks nothing more.
    let (s, _) = api.post(&format!("/v1/runs/{hung}/kill"), json!({})).await;
    assert_eq!(s, 409);

    // Retry links and alarm state: a failing job with one retry and an e-mail contact.
    let fail = api
        .ok(
            "/v1/jobs",
            json!({"group": "details", "handler": "fail", "schedule_type": "NONE", "retry_count": 1,
                   "alarm_contacts": "ops@example.com"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let first = api.ok(&format!("/v1/jobs/{fail}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap();
    let runs = api
        .wait_runs(fail, 30, "the run and its retry failed", |r| {
            r.len() == 2 && r.iter().all(|r| status(r) == "failed")
        })
        .await;
    let retry = runs[0]["id"].as_i64().unwrap();
    assert_eq!(runs[1]["id"], first);
    assert_eq!(runs[0]["trigger_type"], "RETRY");
    assert_eq!(
        (runs[0]["retry_of"].as_i64(), runs[0]["retried_by"].as_i64()),
        (Some(first), None)
    );
    assert_eq!(
        (runs[1]["retry_of"].as_i64(), runs[1]["retried_by"].as_i64()),
        (None, Some(retry))
    );
    assert_eq!(run(&api, first).await["retried_by"], retry, "the single-run read too");
    assert_eq!(listed(&api, fail, "failed").await, vec![retry, first]);
    assert!(listed(&api, fail, "killed").await.is_empty());
    assert_eq!(runs[0]["killed_by"], Value::Null);
    // A kill refused for a finished run marks nothing.
    let (s, _) = api.post(&format!("/v1/runs/{first}/kill"), json!({})).await;
    assert_eq!(s, 409);
    let r = run(&api, first).await;
    assert_eq!((&r["status"], &r["killed_by"]), (&json!("failed"), &Value::Null), "{r}");

    // The retry failed for good: its alarm cannot be e-mailed, and the run says why.
    let deadline = Instant::now() + Duration::from_secs(30);
    let last = loop {
        let r = run(&api, retry).await;
        if r["alarm"] == "failed" {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "alarm of run {retry} not recorded as failed: {r}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let why = last["alarm_msg"].as_str().unwrap();
    assert!(why.contains("no SMTP server is configured"), "{why}");
    assert!(why.contains("1 contact"), "{why}");
    let first_run = run(&api, first).await;
    assert_eq!(
        (first_run["alarm"].as_str(), first_run["alarm_msg"].as_str()),
        (Some("not_needed"), Some("")),
        "the retried run needs no alarm: {first_run}"
    );
    // The killed run failed for good too and is alarmed as any failure: no contacts, nothing
    // to tell.
    let deadline = Instant::now() + Duration::from_secs(30);
    while run(&api, hung).await["alarm"] != "not_needed" {
        assert!(Instant::now() < deadline, "alarm of the killed run not settled");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Another job's run is not claimed as a retry of anything.
    let ok = api
        .ok(
            "/v1/jobs",
            json!({"group": "details", "handler": "ok", "schedule_type": "NONE"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    api.ok(&format!("/v1/jobs/{ok}/trigger"), json!({})).await;
    let runs = api
        .wait_runs(ok, 30, "the good run", |r| r.len() == 1 && status(&r[0]) == "success")
        .await;
    assert_eq!(
        (&runs[0]["retry_of"], &runs[0]["retried_by"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(runs[0]["alarm"], "none");

    // The OpenAPI document's run schema (exact: every key required, no others) fits these runs:
    // a killed one, a retry, a failed run with its retry and a failed alarm.
    let (s, doc) = api.get("/v1/openapi.json").await;
    assert_eq!(s, 200);
    let schema = &doc["components"]["schemas"]["Run"];
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .expect("the run schema lists its keys")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    let enum_of = |key: &str| {
        schema["properties"][key]["enum"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    for r in [run(&api, hung).await, run(&api, first).await, last] {
        let mut keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, required, "{r}");
        assert!(enum_of("status").contains(&r["status"]), "{r}");
        assert!(enum_of("alarm").contains(&r["alarm"]), "{r}");
    }

    ex.kill();
    admin.shutdown().await;
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn run_details_sqlite() {
    scenario(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn run_details_mariadb() {
    scenario(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn run_details_postgres() {
    scenario(Db::Postgres).await;
}

/// Retries and a child run made in the same batch, written by one multi-row insert: each gets
/// the link of its own failed run.
async fn batch_links(kind: Db) {
    let db = TestDb::new(kind).await;
    let store = Store::connect(&db.url).await.unwrap();
    let group = common::insert_manual_group(&store, "links").await;
    let spec = |retries: i64, children: Option<Vec<i64>>| JobSpec {
        group_id: Some(group.id),
        task: chime_admin::api::JobTaskPatch {
            handler: Some("h".into()),
            retry_count: Some(retries),
            ..Default::default()
        },
        schedule: chime_admin::api::SchedulePatch {
            schedule_type: Some("NONE".into()),
            ..Default::default()
        },
        child_job_ids: children,
        ..Default::default()
    };
    let job = |retries, children| {
        let store = store.clone();
        let draft = spec(retries, children).validate(None, "UTC", group.id).unwrap();
        async move { store.insert_job(&draft, "test").await.unwrap() }
    };
    let retried = job(2, None).await;
    let child = job(0, None).await;
    let parent = job(0, Some(vec![child.id])).await;
    let new = |j: &chime_admin::model::Job| NewRun::of_job(j, TriggerType::Api, 1_000, None);
    let t = store
        .insert_runs(&[new(&retried), new(&retried), new(&parent)])
        .await
        .unwrap();
    let (not_sent, failed, succeeded) = (t[0].id, t[1].id, t[2].id);
    let sent = |run_id: i64, job_id: i64, code: i64| TriggerOutcome {
        run_id,
        job_id,
        triggered_at: 1_000,
        address: "http://127.0.0.1:1".into(),
        code,
        msg: String::new(),
        shard_total: 1,
        trigger_type: TriggerType::Api,
    };
    let result = |run_id: i64, code: i64| HandleOutcome {
        run_id,
        code,
        msg: Some("done".into()),
        retry: true,
        lost: false,
    };
    let follow_ups = store
        .record_outcomes(
            &[
                sent(not_sent, retried.id, 500),
                sent(failed, retried.id, 200),
                sent(succeeded, parent.id, 200),
            ],
            &[result(failed, 500), result(succeeded, 200)],
        )
        .await
        .unwrap();
    assert_eq!(follow_ups.len(), 3, "{kind:?}: two retries and a child: {follow_ups:?}");
    let mut links = Vec::new();
    for f in &follow_ups {
        let r = store.run(f.id).await.unwrap();
        links.push((r.job_id, r.trigger_type, r.retry_of));
    }
    links.sort_by_key(|l| l.2);
    assert_eq!(
        links,
        vec![
            (child.id, TriggerType::Parent, None),
            (retried.id, TriggerType::Retry, Some(not_sent)),
            (retried.id, TriggerType::Retry, Some(failed)),
        ],
        "{kind:?}"
    );
    for (id, expected) in [(not_sent, true), (failed, true), (succeeded, false)] {
        let r = store.run(id).await.unwrap();
        assert_eq!(r.retried_by.is_some(), expected, "{kind:?}: run {id}: {r:?}");
        if let Some(retry) = r.retried_by {
            assert_eq!(store.run(retry).await.unwrap().retry_of, Some(id), "{kind:?}");
        }
    }
    store.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn batch_links_sqlite() {
    batch_links(Db::Sqlite).await;
}

#[tokio::test]
async fn batch_links_mariadb() {
    batch_links(Db::MySql).await;
}

#[tokio::test]
async fn batch_links_postgres() {
    batch_links(Db::Postgres).await;
}

/// A listed run's `retried_by` is found in the `(retry_of, id)` index. Over `(retry_of)` alone
/// PostgreSQL found the least id by walking the primary key and checking every run, for each
/// run listed: a page of 50 among 224,000 runs took 16 s.
async fn retried_by_is_an_index_lookup(kind: Db) {
    use sqlx::{Connection, Row};
    let db = TestDb::new(kind).await;
    let store = Store::connect(&db.url).await.expect("store opens and migrates");
    let mut conn = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    // 100,000 runs, every 1,000th retried by the run after it.
    sqlx::query(
        "WITH RECURSIVE g (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100000) \
         INSERT INTO run (job_id, group_id, scheduled_at, trigger_type, created_at, retry_of) \
         SELECT 1, 1, n, 'CRON', n, CASE WHEN n % 1000 = 1 AND n > 1 THEN n - 1 ELSE 0 END FROM g",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    sqlx::query("ANALYZE run").execute(&mut conn).await.unwrap();
    // The lookup as the run list makes it (`store/rows.rs`, `retried_by`).
    let (explain, column) = match kind {
        Db::Sqlite => ("EXPLAIN QUERY PLAN", "detail"),
        _ => ("EXPLAIN", "QUERY PLAN"),
    };
    let plan: Vec<String> = sqlx::query(&format!(
        "{explain} SELECT id, (SELECT MIN(later.id) FROM run later WHERE later.retry_of = run.id) \
         AS retried_by FROM run WHERE id < 100001 ORDER BY id DESC LIMIT 50"
    ))
    .fetch_all(&mut conn)
    .await
    .unwrap()
    .iter()
    .map(|r| r.get::<String, _>(column))
    .collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains("run_retry_of"),
        "the retry is looked up in its index:\n{plan}"
    );
    assert!(
        !plan.contains("Filter: (retry_of"),
        "no run is checked one by one:\n{plan}"
    );
    // And the list names the retry.
    let listed = store
        .list_runs(&chime_admin::model::RunFilter {
            before_id: Some(1002),
            limit: 3,
            ..Default::default()
        })
        .await
        .unwrap();
    let named: Vec<(i64, Option<i64>)> = listed.iter().map(|r| (r.id, r.retried_by)).collect();
    assert_eq!(named, vec![(1001, None), (1000, Some(1001)), (999, None)]);
    drop(conn);
    store.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn retried_by_is_an_index_lookup_sqlite() {
    retried_by_is_an_index_lookup(Db::Sqlite).await;
}

#[tokio::test]
async fn retried_by_is_an_index_lookup_postgres() {
    retried_by_is_an_index_lookup(Db::Postgres).await;
}

/// On PostgreSQL the run table's pages keep room (migration 0037), so the send mark
/// (`Store::mark_sending`), which changes no indexed column, is written in place (a HOT update)
/// instead of adding an entry to every index. On full pages almost none of them is HOT.
#[tokio::test]
async fn a_send_mark_is_written_in_place_postgres() {
    use chime_admin::store::SendMark;
    use sqlx::Row;
    let db = TestDb::new(Db::Postgres).await;
    let store = Store::connect(&db.url).await.expect("store opens and migrates");
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let ids: Vec<i64> = sqlx::query(
        "INSERT INTO run (job_id, group_id, scheduled_at, trigger_type, created_at) \
         SELECT 1, 1, g, 'CRON', g FROM generate_series(1, 1000) AS g RETURNING id",
    )
    .fetch_all(&pool)
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect();
    // A negative token: marks of this admin process's own, which no lease guards.
    let marks: Vec<SendMark> = ids
        .iter()
        .map(|&run_id| SendMark {
            run_id,
            token: -7,
            address: "http://127.0.0.1:9999".into(),
        })
        .collect();
    assert_eq!(store.mark_sending(&marks, 1).await.unwrap().len(), 1000);
    // A backend reports its statistics when it ends, at the latest.
    store.close().await;
    let hot = common::eventually(30, "the marks' statistics", || {
        let pool = pool.clone();
        async move {
            let (updated, hot): (i64, i64) =
                sqlx::query_as("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'run'")
                    .fetch_one(&pool)
                    .await
                    .map_err(|e| e.to_string())?;
            if updated < 1000 {
                return Err(format!("{updated} updates reported"));
            }
            Ok(hot)
        }
    })
    .await;
    assert!(hot >= 500, "{hot} of 1,000 send marks were HOT");
    pool.close().await;
    db.drop_db().await;
}
