//! The claim transaction on every database: the tickets it hands to the timer must name the
//! run rows it inserted — right ids, no fire claimed twice — also when some fires of a batch
//! were claimed before (the unique `(job_id, fire_key)` key skips them), and after the newest
//! runs were deleted. SQLite learns the new ids without `RETURNING` (`store/sqlite_ids.rs`),
//! which is what this guards.

mod common;

use chime_admin::store::{FirePlan, NewRun, Store};
use chime_protocol::TriggerType;
use common::{Db, TestDb};
use std::collections::HashMap;

const OWNER: &str = "claims-test";

/// Claims the fires `keys` of every due job (its `next_fire_at` set to 1 first), and returns
/// `(run id, job id, scheduled_at)` of the tickets.
async fn claim(store: &Store, url: &str, keys: &[i64]) -> Vec<(i64, i64, i64)> {
    common::make_every_job_due(url).await;
    let mut cache = HashMap::new();
    let ready: Vec<i64> = (0..chime_admin::store::PARTITIONS).collect();
    let claimed = store
        .claim_due_fires(OWNER, &ready, 10, 1000, &mut cache, |job| FirePlan {
            runs: keys
                .iter()
                .map(|k| NewRun::of_job(job, TriggerType::Cron, *k, Some(*k)))
                .collect(),
            next_fire_at: 1_000_000,
            last_fire_at: *keys.last().unwrap_or(&0),
        })
        .await
        .unwrap();
    let mut out: Vec<(i64, i64, i64)> = claimed
        .jobs
        .iter()
        .flat_map(|(job, tickets)| tickets.iter().map(move |t| (t.id, job.id, t.scheduled_at)))
        .collect();
    out.sort_unstable();
    out
}

async fn tickets_name_their_rows(kind: Db) {
    let db = TestDb::new(kind).await;
    let store = Store::connect(&db.url).await.unwrap();
    let jobs = common::leased_jobs(&store, "claims", OWNER, 3).await;

    let check = |tickets: &[(i64, i64, i64)], keys: &[i64]| {
        let mut want: Vec<(i64, i64)> = jobs.iter().flat_map(|j| keys.iter().map(move |k| (*j, *k))).collect();
        want.sort_unstable();
        let mut got: Vec<(i64, i64)> = tickets.iter().map(|(_, j, k)| (*j, *k)).collect();
        got.sort_unstable();
        assert_eq!(got, want, "{kind:?}: tickets for exactly the fires not claimed before");
    };

    // A fresh batch: every fire is new.
    let first = claim(&store, &db.url, &[1000, 2000, 3000]).await;
    check(&first, &[1000, 2000, 3000]);
    // Half of this batch was claimed above: only 4000 and 5000 are new, and they come after
    // skipped rows in the same statement.
    let second = claim(&store, &db.url, &[2000, 3000, 4000, 5000]).await;
    check(&second, &[4000, 5000]);
    // Nothing new at all.
    let third = claim(&store, &db.url, &[1000, 5000]).await;
    check(&third, &[]);

    // Every ticket names the row of its own fire, and no row was made twice.
    assert_named(&store, kind, &first).await;
    assert_named(&store, kind, &second).await;
    let ids: std::collections::HashSet<i64> = first.iter().chain(&second).map(|t| t.0).collect();
    assert_eq!(ids.len(), 15, "{kind:?}: distinct run ids");
    let (pending, _) = store.count_open_runs().await.unwrap();
    assert_eq!(pending, 15, "{kind:?}: five fires of three jobs, each stored once");

    // The newest runs deleted (a job deleted with its runs, an import's ids): the run counter
    // is ahead of every row, and the next ids follow the counter, not the rows.
    let newest = ids.iter().copied().max().unwrap();
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    sqlx::query(&format!("DELETE FROM run WHERE id > {}", newest - 3))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let fourth = claim(&store, &db.url, &[6000]).await;
    check(&fourth, &[6000]);
    for (id, ..) in &fourth {
        assert!(*id > newest, "{kind:?}: run {id} numbered after the deleted {newest}");
    }
    assert_named(&store, kind, &fourth).await;
    store.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn tickets_name_their_rows_sqlite() {
    tickets_name_their_rows(Db::Sqlite).await;
}

#[tokio::test]
async fn tickets_name_their_rows_mysql() {
    tickets_name_their_rows(Db::MySql).await;
}

#[tokio::test]
async fn tickets_name_their_rows_postgres() {
    tickets_name_their_rows(Db::Postgres).await;
}

/// Every ticket `(run id, job id, scheduled_at)` names its own run's row.
async fn assert_named(store: &Store, kind: Db, tickets: &[(i64, i64, i64)]) {
    for (id, job_id, scheduled_at) in tickets {
        let run = store.run(*id).await.unwrap();
        assert_eq!(
            (run.job_id, run.scheduled_at),
            (*job_id, *scheduled_at),
            "{kind:?}: run {id}"
        );
    }
}

/// Large inserts go in several statements (`Backend::insert_slices`); on SQLite the ids of each
/// follow the last one's (`sqlite_ids::IdCursor`), so a wrong carry would hand the timer
/// tickets naming other runs' rows. Checked through a claim of 1,311 fires (statements of
/// 1,000, 256, 32, 16, 4, 2 and 1 rows), a second claim whose skipped fires sit in the middle
/// (the statements after them read the counter again), and 1,300 manual runs.
async fn chunked_inserts_name_their_rows(kind: Db) {
    let db = TestDb::new(kind).await;
    let store = Store::connect(&db.url).await.unwrap();
    let jobs = common::leased_jobs(&store, "chunks", OWNER, 3).await;
    let now = chime_admin::model::now_ms();
    let keys: Vec<i64> = (1..=437).map(|k| k * 1000).collect();
    let first = claim(&store, &db.url, &keys).await;
    assert_eq!(first.len(), 3 * 437, "{kind:?}: every fire claimed once");
    assert_named(&store, kind, &first).await;
    // Keys 400–437 thousand were claimed above, the rest is new: skipped rows in the middle.
    let keys: Vec<i64> = (400..=900).map(|k| k * 1000).collect();
    let second = claim(&store, &db.url, &keys).await;
    assert_eq!(
        second.len(),
        3 * (900 - 437),
        "{kind:?}: only the fires not claimed before"
    );
    assert!(second.iter().all(|(_, _, at)| *at > 437_000), "{kind:?}: no fire twice");
    assert_named(&store, kind, &second).await;

    let job = store.job(jobs[0]).await.unwrap();
    let runs: Vec<NewRun> = (0..1300)
        .map(|i| NewRun::of_job(&job, TriggerType::Api, now + i, None))
        .collect();
    let tickets = store.insert_runs(&runs).await.unwrap();
    assert_eq!(tickets.len(), runs.len(), "{kind:?}");
    for (t, r) in tickets.iter().zip(&runs) {
        assert_eq!(
            t.scheduled_at, r.scheduled_at,
            "{kind:?}: tickets in the order of the runs"
        );
        assert_eq!(
            store.run(t.id).await.unwrap().scheduled_at,
            r.scheduled_at,
            "{kind:?}: run {}",
            t.id
        );
    }
    let ids: std::collections::HashSet<i64> = first
        .iter()
        .chain(&second)
        .map(|t| t.0)
        .chain(tickets.iter().map(|t| t.id))
        .collect();
    assert_eq!(ids.len(), 3 * 900 + 1300, "{kind:?}: distinct run ids");
    store.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn chunked_inserts_name_their_rows_sqlite() {
    chunked_inserts_name_their_rows(Db::Sqlite).await;
}

#[tokio::test]
async fn chunked_inserts_name_their_rows_mysql() {
    chunked_inserts_name_their_rows(Db::MySql).await;
}

#[tokio::test]
async fn chunked_inserts_name_their_rows_postgres() {
    chunked_inserts_name_their_rows(Db::Postgres).await;
}
