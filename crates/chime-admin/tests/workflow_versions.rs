//! A workflow's graph kept once per version (migration 0016), on SQLite, MariaDB and
//! PostgreSQL: a database of the schema before it is upgraded with every instance keeping the
//! graph it was fired with and every workflow its graph; a graph saved unchanged keeps its
//! version, a changed one makes a new version that new instances share; retention deletes a
//! version once no instance and no workflow uses it.

mod common;

use chime_admin::store::{Backend, Store};
use chime_admin::workflow::dag::Definition;
use chime_admin::workflow::spec::{OnLimit, WorkflowDraft};
use chime_protocol::{MisfireStrategy, ScheduleType, TriggerType};
use common::{Db, TestDb};
use serde_json::json;
use sqlx::{Connection, Row};

/// The migration that moved graphs into versions.
const VERSIONS: i64 = 16;

fn graph(keys: &[&str]) -> Definition {
    let nodes: Vec<_> = keys.iter().map(|k| json!({ "key": k, "job_id": 999_999 })).collect();
    serde_json::from_value(json!({ "nodes": nodes })).unwrap()
}

fn draft(definition: Definition) -> WorkflowDraft {
    WorkflowDraft {
        name: "nightly".into(),
        description: String::new(),
        schedule_type: ScheduleType::None,
        schedule_expr: String::new(),
        time_zone: "UTC".into(),
        misfire_strategy: MisfireStrategy::DoNothing,
        calendar: String::new(),
        max_instances: 0,
        on_limit: OnLimit::Skip,
        alarm_channels: String::new(),
        definition,
        running: false,
    }
}

async fn count(conn: &mut sqlx::AnyConnection, sql: &str) -> i64 {
    sqlx::query(sql).fetch_one(&mut *conn).await.unwrap().get::<i64, _>(0)
}

async fn version_exists(conn: &mut sqlx::AnyConnection, backend: Backend, id: i64) -> bool {
    let q = backend.sql("SELECT COUNT(*) FROM workflow_version WHERE id = ?");
    sqlx::query(&q)
        .bind(id)
        .fetch_one(&mut *conn)
        .await
        .unwrap()
        .get::<i64, _>(0)
        == 1
}

async fn upgrade_keeps_graphs(kind: Db) {
    let db = TestDb::new(kind).await;
    let backend = Backend::from_url(&db.url).unwrap();
    let mut conn = db.migrated_before(VERSIONS).await;

    // The schema before: each instance carries its graph.
    let old = serde_json::to_string(&graph(&["a"])).unwrap();
    let current = serde_json::to_string(&graph(&["a", "b"])).unwrap();
    let q = backend.sql(
        "INSERT INTO workflow (name, schedule_type, time_zone, misfire_strategy, definition, created_at, updated_at) \
         VALUES ('nightly', 'NONE', 'UTC', 'DO_NOTHING', ?, 1, 2)",
    );
    sqlx::query(&q).bind(&current).execute(&mut conn).await.unwrap();
    let workflow_id = count(&mut conn, "SELECT MAX(id) FROM workflow").await;
    let q = backend.sql(
        "INSERT INTO workflow_instance (workflow_id, scheduled_at, trigger_type, state, definition, created_at, finished_at) \
         VALUES (?, 10, 'MANUAL', 'succeeded', ?, 10, 20)",
    );
    for definition in [&old, &current] {
        sqlx::query(&q)
            .bind(workflow_id)
            .bind(definition)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let made = count(&mut conn, "SELECT MAX(id) FROM workflow_instance").await;
    let first = made - 1;

    // Upgraded when the admin's store opens the database.
    let store = Store::connect(&db.url).await.unwrap();
    assert_eq!(store.instance(first).await.unwrap().definition, graph(&["a"]));
    assert_eq!(store.instance(made).await.unwrap().definition, graph(&["a", "b"]));
    let w = store.workflow(workflow_id).await.unwrap();
    assert_eq!(w.definition, graph(&["a", "b"]));
    assert!(w.version > made, "the workflow's version follows the instances' own");
    assert_eq!(
        count(&mut conn, "SELECT COUNT(*) FROM workflow_version").await,
        3,
        "one version for each instance and one for the workflow"
    );

    // Saved unchanged: the same version. Changed: a new one, which new instances share, and
    // the old one goes, as no instance was fired from it.
    let same = store
        .update_workflow(workflow_id, &draft(graph(&["a", "b"])))
        .await
        .unwrap();
    assert_eq!(same.version, w.version);
    let changed = store
        .update_workflow(workflow_id, &draft(graph(&["a", "b", "c"])))
        .await
        .unwrap();
    assert!(changed.version > w.version);
    assert!(!version_exists(&mut conn, backend, w.version).await);
    for _ in 0..2 {
        let (id, _) = store.trigger_workflow(workflow_id, TriggerType::Api).await.unwrap();
        let instance = store.instance(id).await.unwrap();
        assert_eq!(instance.version, changed.version);
        assert_eq!(instance.definition, graph(&["a", "b", "c"]));
    }
    assert_eq!(count(&mut conn, "SELECT COUNT(*) FROM workflow_version").await, 3);

    // Retention deletes every instance (the new ones failed at once: their job does not
    // exist), and the versions no longer used; the workflow's own stays.
    let deleted = store
        .delete_finished_instances_before(chime_admin::model::now_ms() + 60_000, 1)
        .await
        .unwrap();
    assert_eq!(deleted, 4);
    assert!(!version_exists(&mut conn, backend, first).await);
    assert!(!version_exists(&mut conn, backend, made).await);
    assert!(version_exists(&mut conn, backend, changed.version).await);
    assert_eq!(count(&mut conn, "SELECT COUNT(*) FROM workflow_version").await, 1);
    store.close().await;
    conn.close().await.unwrap();
    db.drop_db().await;
}

#[tokio::test]
async fn upgrade_keeps_graphs_sqlite() {
    upgrade_keeps_graphs(Db::Sqlite).await;
}

#[tokio::test]
async fn upgrade_keeps_graphs_mysql() {
    upgrade_keeps_graphs(Db::MySql).await;
}

#[tokio::test]
async fn upgrade_keeps_graphs_postgres() {
    upgrade_keeps_graphs(Db::Postgres).await;
}
