//! A job's failures in a row (`after_failures=N`) are counted over its ended runs, newest
//! first, read a page at a time: the count goes across pages, stops at a success, and passes
//! over runs still open, on every database.

mod common;

use chime_admin::model::{Job, JobSpec};
use chime_admin::store::{HandleOutcome, NewRun, Store, TriggerOutcome};
use chime_protocol::TriggerType;
use common::{Db, TestDb};

/// Creates `count` runs of `job` and ends each with `code` (`None`: left open); their ids.
async fn runs(store: &Store, job: &Job, count: usize, code: Option<i64>) -> Vec<i64> {
    let new: Vec<NewRun> = (0..count)
        .map(|_| NewRun::of_job(job, TriggerType::Api, 1_000, None))
        .collect();
    let ids: Vec<i64> = store.insert_runs(&new).await.unwrap().iter().map(|t| t.id).collect();
    let triggers: Vec<TriggerOutcome> = ids
        .iter()
        .map(|&run_id| TriggerOutcome {
            run_id,
            job_id: job.id,
            triggered_at: 1_000,
            address: "http://127.0.0.1:1".into(),
            code: 200,
            msg: String::new(),
            shard_total: 1,
            trigger_type: TriggerType::Api,
        })
        .collect();
    let handles: Vec<HandleOutcome> = match code {
        None => Vec::new(),
        Some(code) => ids
            .iter()
            .map(|&run_id| HandleOutcome {
                run_id,
                code,
                msg: Some(format!("code {code}")),
                retry: true,
                lost: false,
            })
            .collect(),
    };
    store.record_outcomes(&triggers, &handles).await.unwrap();
    ids
}

async fn streaks(kind: Db) {
    let db = TestDb::new(kind).await;
    let store = Store::connect(&db.url).await.unwrap();
    let group = common::insert_manual_group(&store, "streaks").await;
    let spec = JobSpec {
        group_id: Some(group.id),
        task: chime_admin::api::JobTaskPatch {
            handler: Some("h".into()),
            ..Default::default()
        },
        schedule: chime_admin::api::SchedulePatch {
            schedule_type: Some("NONE".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let job = store
        .insert_job(&spec.validate(None, "UTC", group.id).unwrap(), "test")
        .await
        .unwrap();

    runs(&store, &job, 3, Some(500)).await;
    runs(&store, &job, 1, Some(200)).await;
    let failed = runs(&store, &job, 150, Some(500)).await;
    let last = *failed.last().unwrap();
    assert_eq!(
        store.failure_streak(job.id, last).await.unwrap(),
        150,
        "{kind:?}: 150 failures since the success, over three pages"
    );
    assert_eq!(
        store.failure_streak(job.id, failed[69]).await.unwrap(),
        70,
        "{kind:?}: counted up to the run asked about"
    );
    let open = runs(&store, &job, 70, None).await;
    let after = runs(&store, &job, 2, Some(500)).await;
    assert_eq!(
        store.failure_streak(job.id, after[1]).await.unwrap(),
        152,
        "{kind:?}: runs still open are passed over"
    );
    assert_eq!(store.failure_streak(job.id, open[0]).await.unwrap(), 150, "{kind:?}");
    let ok = runs(&store, &job, 1, Some(200)).await;
    assert_eq!(store.failure_streak(job.id, ok[0]).await.unwrap(), 0, "{kind:?}");
    store.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn streaks_sqlite() {
    streaks(Db::Sqlite).await;
}

#[tokio::test]
async fn streaks_postgres() {
    streaks(Db::Postgres).await;
}

#[tokio::test]
async fn streaks_mariadb() {
    streaks(Db::MySql).await;
}
