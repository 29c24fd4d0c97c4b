//! Workflow instance lists read a page, not the whole history (migration 0018), on SQLite,
//! MariaDB and PostgreSQL: over 100,000 kept instances, every list the console and
//! `GET /v1/workflow-instances` make (one workflow's, one state's, one state of one workflow's,
//! newest first, from a cursor or not) is walked in id order through an index, where the
//! schema before sorted all the instances that matched for every page (0.24 s a page for a
//! workflow with 900,000 instances on SQLite). The lists themselves are checked too.

mod common;

use chime_admin::store::Store;
use chime_admin::workflow::dag::{Definition, InstanceState};
use common::{Db, TestDb};
use serde_json::json;
use sqlx::{Connection, Row};

type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// The migration that indexed the lists.
const LIST_INDEXES: i64 = 18;
/// Instances kept, `g` = 1..=100,000 (their ids): see [`workflow_of`] and [`failed`].
const INSTANCES: i64 = 100_000;
/// A page.
const PAGE: i64 = 50;

/// Instance `g`'s workflow: 2 for a tenth of them, 3 for a hundredth, 1 for the rest.
fn workflow_of(g: i64) -> i64 {
    if g % 10 == 0 {
        2
    } else if g % 100 == 5 {
        3
    } else {
        1
    }
}

/// Whether instance `g` failed (one in 997; the rest succeeded).
fn failed(g: i64) -> bool {
    g % 997 == 0
}

/// One list the console or the API makes.
struct List {
    what: &'static str,
    workflow: Option<i64>,
    state: Option<InstanceState>,
    before: Option<i64>,
}

const fn list(what: &'static str, workflow: Option<i64>, state: Option<InstanceState>, before: Option<i64>) -> List {
    List {
        what,
        workflow,
        state,
        before,
    }
}

const LISTS: [List; 9] = [
    list("a busy workflow's", Some(1), None, None),
    list("a workflow's with a tenth of the instances", Some(2), None, None),
    list("a workflow's with a hundredth", Some(3), None, None),
    list("a page further on", Some(2), None, Some(50_000)),
    list("one state's", None, Some(InstanceState::Succeeded), None),
    list("a rare state's", None, Some(InstanceState::Failed), None),
    list(
        "one state of a busy workflow",
        Some(1),
        Some(InstanceState::Succeeded),
        None,
    ),
    list(
        "one state of a small workflow",
        Some(3),
        Some(InstanceState::Succeeded),
        None,
    ),
    list(
        "a rare state of a busy workflow",
        Some(1),
        Some(InstanceState::Failed),
        Some(99_000),
    ),
];

impl List {
    /// The ids it should show: newest first, a page.
    fn expected(&self) -> Vec<i64> {
        (1..=INSTANCES)
            .rev()
            .filter(|g| self.workflow.is_none_or(|w| workflow_of(*g) == w))
            .filter(|g| self.state.is_none_or(|s| (s == InstanceState::Failed) == failed(*g)))
            .filter(|g| self.before.is_none_or(|b| *g < b))
            .take(PAGE as usize)
            .collect()
    }

    /// The statement the store ran for it before migration 0018, with the values in it.
    fn before_0018(&self) -> String {
        let mut q = String::from(
            "SELECT i.id, v.definition FROM workflow_instance i JOIN workflow_version v ON v.id = i.version_id \
             WHERE 1 = 1",
        );
        if let Some(w) = self.workflow {
            q.push_str(&format!(" AND i.workflow_id = {w}"));
        }
        if let Some(s) = self.state {
            q.push_str(&format!(" AND i.state = '{}'", s.as_str()));
        }
        if let Some(b) = self.before {
            q.push_str(&format!(" AND i.id < {b}"));
        }
        q + &format!(" ORDER BY i.id DESC LIMIT {PAGE}")
    }
}

/// `SELECT 0 … 9` as a table of one column `n`.
fn digits() -> String {
    let ds: Vec<String> = (0..10).map(|d| format!("SELECT {d} AS n")).collect();
    format!("({})", ds.join(" UNION ALL "))
}

/// Fills the tables as the schema before the list indexes has them, in one statement every
/// database runs (the same rule as [`workflow_of`] and [`failed`]).
async fn fill(conn: &mut sqlx::AnyConnection) {
    let definition: Definition = serde_json::from_value(json!({ "nodes": [{ "key": "a", "job_id": 1 }] })).unwrap();
    let definition = serde_json::to_string(&definition).unwrap();
    for w in [1, 2, 3] {
        sqlx::query(&format!(
            "INSERT INTO workflow_version (id, workflow_id, definition, created_at) VALUES ({w}, {w}, '{definition}', 0)"
        ))
        .execute(&mut *conn)
        .await
        .unwrap();
    }
    let d = digits();
    let workflow = "CASE WHEN g % 10 = 0 THEN 2 WHEN g % 100 = 5 THEN 3 ELSE 1 END";
    let q = format!(
        "INSERT INTO workflow_instance (id, workflow_id, fire_key, scheduled_at, trigger_type, state, created_at, \
         finished_at, version_id) \
         SELECT g, {workflow}, g, g, 'CRON', CASE WHEN g % 997 = 0 THEN 'failed' ELSE 'succeeded' END, g, g + 1, {workflow} \
         FROM (SELECT a.n + 10 * b.n + 100 * c.n + 1000 * d.n + 10000 * e.n + 1 AS g \
         FROM {d} a CROSS JOIN {d} b CROSS JOIN {d} c CROSS JOIN {d} d CROSS JOIN {d} e) t"
    );
    let made = sqlx::query(&q).execute(&mut *conn).await.unwrap().rows_affected();
    assert_eq!(made as i64, INSTANCES);
}

/// Gives the planner the tables' statistics, as a database in use has them (SQLite's admin
/// does not gather any, so neither does this).
async fn analyze(conn: &mut sqlx::AnyConnection, kind: Db) {
    let q = match kind {
        Db::Sqlite => return,
        Db::MySql => "ANALYZE TABLE workflow_instance, workflow_version",
        Db::Postgres => "ANALYZE workflow_instance; ANALYZE workflow_version",
    };
    sqlx::raw_sql(q).execute(&mut *conn).await.unwrap();
}

/// The plan of `query` (a statement, its values bound) as text, and whether it sorts.
async fn plan<'q>(conn: &mut sqlx::AnyConnection, kind: Db, query: AnyQuery<'q>) -> (bool, String) {
    let (column, sorts): (&str, &str) = match kind {
        Db::Sqlite => ("detail", "TEMP B-TREE FOR ORDER BY"),
        Db::MySql => ("Extra", "filesort"),
        Db::Postgres => ("QUERY PLAN", "Sort"),
    };
    let lines: Vec<String> = query
        .fetch_all(&mut *conn)
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get::<Option<String>, _>(column).unwrap().unwrap_or_default())
        .collect();
    let text = lines.join("\n");
    (text.contains(sorts), text)
}

fn explain(kind: Db) -> &'static str {
    match kind {
        Db::Sqlite => "EXPLAIN QUERY PLAN ",
        Db::MySql | Db::Postgres => "EXPLAIN ",
    }
}

async fn lists_walk_an_index(kind: Db) {
    let db = TestDb::new(kind).await;
    let mut conn = db.migrated_before(LIST_INDEXES).await;
    fill(&mut conn).await;
    analyze(&mut conn, kind).await;

    // Before: some lists sorted every instance they matched (the planners walk every instance
    // backwards instead when a list holds most of them). This is what the test is to catch.
    let mut sorted_before = Vec::new();
    for l in &LISTS {
        let q = format!("{}{}", explain(kind), l.before_0018());
        if plan(&mut conn, kind, sqlx::query(&q)).await.0 {
            sorted_before.push(l.what);
        }
    }
    assert!(
        !sorted_before.is_empty(),
        "{kind:?}: before migration 0018 no list sorted; this test would not see one sorted"
    );

    // The admin's store upgrades the schema; then no list sorts, and each shows its page.
    let store = Store::connect(&db.url).await.unwrap();
    analyze(&mut conn, kind).await;
    for l in &LISTS {
        let q = format!(
            "{}{}",
            explain(kind),
            store.instance_list_sql(l.workflow.is_some(), l.state.is_some(), l.before.is_some())
        );
        let mut query = sqlx::query(&q);
        if let Some(w) = l.workflow {
            query = query.bind(w);
        }
        if let Some(s) = l.state {
            query = query.bind(s.as_str());
        }
        if let Some(b) = l.before {
            query = query.bind(b);
        }
        let (sorts, text) = plan(&mut conn, kind, query.bind(PAGE)).await;
        assert!(
            !sorts,
            "{kind:?}: {} list is read in id order, not sorted (before 0018 these sorted: {sorted_before:?}):\n{text}",
            l.what
        );
        let shown = store.list_instances(l.workflow, l.state, l.before, PAGE).await.unwrap();
        assert_eq!(
            shown.iter().map(|i| i.id).collect::<Vec<_>>(),
            l.expected(),
            "{kind:?}: {} list",
            l.what
        );
        assert!(shown
            .iter()
            .all(|i| l.workflow.is_none_or(|w| i.workflow_id == w) && l.state.is_none_or(|s| i.state == s)));
    }
    store.close().await;
    conn.close().await.unwrap();
    db.drop_db().await;
}

#[tokio::test]
async fn instance_lists_walk_an_index_sqlite() {
    lists_walk_an_index(Db::Sqlite).await;
}

#[tokio::test]
async fn instance_lists_walk_an_index_mysql() {
    lists_walk_an_index(Db::MySql).await;
}

#[tokio::test]
async fn instance_lists_walk_an_index_postgres() {
    lists_walk_an_index(Db::Postgres).await;
}
