//! Retention on SQLite, MariaDB and PostgreSQL: the admin's start-up sweep deletes finished
//! runs (success, failure, send failure, skipped) older than `run_retention_days`, in several
//! batches, and keeps pending and running runs however old, and every younger run; and audit
//! log entries older than `audit_retention_days`. Stored run logs go with their runs; alarms no
//! run raised go after the runs' retention too, unless one is still pending or open.

mod common;

use chime_admin::retention::Deleted;
use chime_admin::store::Backend;
use common::{Db, TestDb};
use sqlx::Connection;
use std::time::{Duration, Instant};

const DAY_MS: i64 = 24 * 3600 * 1000;
/// More than two of the sweep's batches.
const BULK: usize = 2500;

/// Inserts runs with the given `(trigger_code, handle_code, created_at)`, returning their ids in
/// insertion order.
async fn insert(conn: &mut sqlx::AnyConnection, backend: Backend, rows: &[(i64, i64, i64)]) -> Vec<i64> {
    for chunk in rows.chunks(250) {
        let mut sql = String::from(
            "INSERT INTO run (job_id, group_id, scheduled_at, trigger_type, trigger_code, handle_code, created_at, param, trigger_msg, handle_msg) VALUES ",
        );
        for i in 0..chunk.len() {
            if i > 0 {
                sql.push(',');
            }
            sql.push_str("(1, 1, ?, 'CRON', ?, ?, ?, '', '', '')");
        }
        let sql = backend.sql(&sql).into_owned();
        let mut q = sqlx::query(&sql);
        for (t, h, at) in chunk {
            q = q.bind(*at).bind(*t).bind(*h).bind(*at);
        }
        q.execute(&mut *conn).await.unwrap();
    }
    // The table was empty: every run is one of these.
    let all = sqlx::query("SELECT id FROM run ORDER BY id")
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    all.iter().map(|r| sqlx::Row::get::<i64, _>(r, 0)).collect()
}

/// Inserts audit entries recorded at the given times; returns their ids in insertion order.
async fn insert_audit(conn: &mut sqlx::AnyConnection, backend: Backend, ats: &[i64]) -> Vec<i64> {
    for chunk in ats.chunks(250) {
        let mut sql = String::from("INSERT INTO audit_log (at, username, action, target, detail) VALUES ");
        for i in 0..chunk.len() {
            if i > 0 {
                sql.push(',');
            }
            sql.push_str("(?, 'alice', 'PUT /v1/jobs/{id}', '/v1/jobs/1', '{}')");
        }
        let sql = backend.sql(&sql).into_owned();
        let mut q = sqlx::query(&sql);
        for at in chunk {
            q = q.bind(*at);
        }
        q.execute(&mut *conn).await.unwrap();
    }
    let all = sqlx::query("SELECT id FROM audit_log ORDER BY id")
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    all.iter().map(|r| sqlx::Row::get::<i64, _>(r, 0)).collect()
}

async fn audit_present(conn: &mut sqlx::AnyConnection, backend: Backend, ids: &[i64]) -> usize {
    let list = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let q = backend
        .sql(&format!("SELECT COUNT(*) FROM audit_log WHERE id IN ({list})"))
        .into_owned();
    let row = sqlx::query(&q).fetch_one(&mut *conn).await.unwrap();
    sqlx::Row::get::<i64, _>(&row, 0) as usize
}

async fn present(conn: &mut sqlx::AnyConnection, backend: Backend, ids: &[i64]) -> usize {
    let list = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let q = backend
        .sql(&format!("SELECT COUNT(*) FROM run WHERE id IN ({list})"))
        .into_owned();
    let row = sqlx::query(&q).fetch_one(&mut *conn).await.unwrap();
    sqlx::Row::get::<i64, _>(&row, 0) as usize
}

/// Stores a log for each of `ids` as the admin keeps them (`run_log`).
async fn insert_logs(conn: &mut sqlx::AnyConnection, backend: Backend, ids: &[i64]) {
    let sql = backend
        .sql("INSERT INTO run_log (run_id, content, truncated, total_bytes, stored_at) VALUES (?, 'a line', 0, 6, 0)")
        .into_owned();
    for id in ids {
        sqlx::query(&sql).bind(*id).execute(&mut *conn).await.unwrap();
    }
}

/// How many of `ids` have a stored log.
async fn logs_present(conn: &mut sqlx::AnyConnection, backend: Backend, ids: &[i64]) -> usize {
    let list = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let q = backend
        .sql(&format!("SELECT COUNT(*) FROM run_log WHERE run_id IN ({list})"))
        .into_owned();
    let row = sqlx::query(&q).fetch_one(&mut *conn).await.unwrap();
    sqlx::Row::get::<i64, _>(&row, 0) as usize
}

/// Stores an alarm no run raised, created at `at`, with one delivery in `state` (0 pending, 1
/// sent); returns the event's id.
async fn insert_alarm_event(conn: &mut sqlx::AnyConnection, backend: Backend, key: &str, at: i64, state: i64) -> i64 {
    let sql = backend
        .sql("INSERT INTO alarm_event (event, subject, claim_key, title, facts, created_at) VALUES ('no_executor', 1, ?, 't', '[]', ?)")
        .into_owned();
    sqlx::query(&sql).bind(key).bind(at).execute(&mut *conn).await.unwrap();
    let sql = backend
        .sql("SELECT id FROM alarm_event WHERE claim_key = ?")
        .into_owned();
    let row = sqlx::query(&sql).bind(key).fetch_one(&mut *conn).await.unwrap();
    let id = sqlx::Row::get::<i64, _>(&row, 0);
    let sql = backend
        .sql("INSERT INTO alarm_delivery (run_id, event_id, channel, kind, state, next_at, created_at) VALUES (0, ?, 'ops', 'slack', ?, ?, ?)")
        .into_owned();
    // Due tomorrow (a retry's pause): the outbox leaves a pending one alone during the test.
    let next_at = chime_admin::model::now_ms() + DAY_MS;
    sqlx::query(&sql)
        .bind(id)
        .bind(state)
        .bind(next_at)
        .bind(at)
        .execute(&mut *conn)
        .await
        .unwrap();
    id
}

/// The alarm events of `ids` still stored, and the deliveries they still have.
async fn alarm_events_present(conn: &mut sqlx::AnyConnection, ids: &[i64]) -> (usize, usize) {
    let list = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let mut counts = [0usize; 2];
    let queries = [
        format!("SELECT COUNT(*) FROM alarm_event WHERE id IN ({list})"),
        format!("SELECT COUNT(*) FROM alarm_delivery WHERE event_id IN ({list})"),
    ];
    for (count, sql) in counts.iter_mut().zip(&queries) {
        let row = sqlx::query(sql).fetch_one(&mut *conn).await.unwrap();
        *count = sqlx::Row::get::<i64, _>(&row, 0) as usize;
    }
    (counts[0], counts[1])
}

async fn sweep_keeps_open_and_young_runs(kind: Db) {
    let db = TestDb::new(kind).await;
    // Create the schema.
    chime_admin::store::Store::connect(&db.url).await.unwrap().close().await;
    let backend = Backend::from_url(&db.url).unwrap();
    let mut conn = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    let now = chime_admin::model::now_ms();
    let old = now - 40 * DAY_MS;
    let mut rows = vec![
        (200, 200, old),               // success: deleted
        (0, 0, old),                   // pending: kept
        (200, 0, old),                 // running: kept
        (200, 500, old),               // failed: deleted
        (-1, 0, old),                  // skipped misfire: deleted
        (500, 0, old),                 // could not be sent: deleted
        (200, 200, now - 29 * DAY_MS), // younger than 30 days: kept
    ];
    // The younger run comes last in id order, as it would in a real table.
    let young = rows.pop().unwrap();
    rows.extend(std::iter::repeat_n((200, 200, old + 1000), BULK));
    rows.push(young);
    let ids = insert(&mut conn, backend, &rows).await;
    assert_eq!(ids.len(), rows.len());
    let keep = vec![ids[1], ids[2], ids[ids.len() - 1]];
    let doomed: Vec<i64> = ids.iter().copied().filter(|i| !keep.contains(i)).collect();
    // Stored logs of a deleted run (the first, and one in the last batch) and of kept runs.
    let doomed_logs = [ids[0], ids[ids.len() - 2]];
    insert_logs(&mut conn, backend, &doomed_logs).await;
    insert_logs(&mut conn, backend, &keep).await;
    // Audit entries: more than a batch older than 90 days, and one younger.
    let mut ats = vec![now - 100 * DAY_MS; 1200];
    ats.push(now - 89 * DAY_MS);
    let audit_ids = insert_audit(&mut conn, backend, &ats).await;
    let (old_audit, young_audit) = audit_ids.split_at(1200);
    // Alarms no run raised: an old one told (deleted with its delivery), an old one still
    // pending, an old one a group's open outage points to, and a young one (all kept).
    let old_told = insert_alarm_event(&mut conn, backend, "old-told", old, 1).await;
    let old_pending = insert_alarm_event(&mut conn, backend, "old-pending", old, 0).await;
    let old_open = insert_alarm_event(&mut conn, backend, "old-open", old, 1).await;
    let young_event = insert_alarm_event(&mut conn, backend, "young", now - DAY_MS, 1).await;
    let sql = backend
        .sql("INSERT INTO alarm_group_incident (group_id, event_id, alarmed, opened_at) VALUES (7, ?, 1, ?)")
        .into_owned();
    sqlx::query(&sql)
        .bind(old_open)
        .bind(old)
        .execute(&mut conn)
        .await
        .unwrap();

    let mut config = common::config(&db.url);
    config.run_retention_days = 30;
    config.audit_retention_days = 90;
    let admin = chime_admin::start(config).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = present(&mut conn, backend, &doomed).await;
        let left_audit = audit_present(&mut conn, backend, old_audit).await;
        if left == 0 && left_audit == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{left} expired runs and {left_audit} expired audit entries are still there"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        present(&mut conn, backend, &keep).await,
        keep.len(),
        "pending, running and young runs stay"
    );
    assert_eq!(
        audit_present(&mut conn, backend, young_audit).await,
        1,
        "a young audit entry stays"
    );
    assert_eq!(
        logs_present(&mut conn, backend, &doomed_logs).await,
        0,
        "stored logs go with their runs"
    );
    assert_eq!(
        logs_present(&mut conn, backend, &keep).await,
        keep.len(),
        "kept runs keep their logs"
    );
    assert_eq!(
        alarm_events_present(&mut conn, &[old_told]).await,
        (0, 0),
        "an old alarm event goes with its delivery"
    );
    assert_eq!(
        alarm_events_present(&mut conn, &[old_pending, old_open, young_event]).await,
        (3, 3),
        "pending, open-outage and young alarm events stay"
    );
    // A second sweep finds nothing more to delete.
    assert_eq!(
        chime_admin::retention::sweep(admin.retention()).await.unwrap(),
        Deleted::default()
    );
    assert_eq!(present(&mut conn, backend, &keep).await, keep.len());
    admin.shutdown().await;
    conn.close().await.unwrap();
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_sqlite() {
    sweep_keeps_open_and_young_runs(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_mysql() {
    sweep_keeps_open_and_young_runs(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_postgres() {
    sweep_keeps_open_and_young_runs(Db::Postgres).await;
}

/// Retention 0 keeps everything, runs and audit entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_zero_keeps_everything() {
    let db = TestDb::new(Db::Sqlite).await;
    chime_admin::store::Store::connect(&db.url).await.unwrap().close().await;
    let backend = Backend::from_url(&db.url).unwrap();
    let mut conn = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    let ids = insert(&mut conn, backend, &[(200, 200, 1000), (200, 500, 2000)]).await;
    let audit_ids = insert_audit(&mut conn, backend, &[1000, 2000]).await;
    let mut config = common::config(&db.url);
    config.run_retention_days = 0;
    config.audit_retention_days = 0;
    let admin = chime_admin::start(config).await.unwrap();
    assert_eq!(
        chime_admin::retention::sweep(admin.retention()).await.unwrap(),
        Deleted::default()
    );
    assert_eq!(present(&mut conn, backend, &ids).await, 2);
    assert_eq!(audit_present(&mut conn, backend, &audit_ids).await, 2);
    admin.shutdown().await;
    conn.close().await.unwrap();
    db.drop_db().await;
}
