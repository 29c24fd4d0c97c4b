//! Jobs created at the same moment are committed together (`store/job_inserts.rs`), and each
//! caller still gets its own answer: a create with a key its group already has, or naming a
//! group or child job that does not exist, fails alone, and every other create of the same
//! round is made once, named and put in its partition as a create on its own would be.

mod common;

use chime_admin::model::JobSpec;
use chime_admin::store::{Store, StoreError, PARTITIONS};
use common::{Db, TestDb};
use std::collections::HashSet;

/// How many creates race in each round.
const CREATES: usize = 40;

async fn racing_creates(kind: Db) {
    let db = TestDb::new(kind).await;
    let store = Store::connect(&db.url).await.unwrap();
    let group = common::insert_manual_group(&store, "grouped").await;
    let spec = |key: Option<String>| JobSpec {
        group_id: Some(group.id),
        task: chime_admin::api::JobTaskPatch {
            handler: Some("h".into()),
            ..Default::default()
        },
        schedule: chime_admin::api::SchedulePatch {
            schedule_type: Some("CRON".into()),
            schedule_expr: Some("* * * * * ?".into()),
            ..Default::default()
        },
        running: Some(true),
        key,
        ..Default::default()
    };
    let taken = store
        .insert_job(
            &spec(Some("taken".into())).validate(None, "UTC", group.id).unwrap(),
            "test",
        )
        .await
        .unwrap();

    // Every create of the round: most plain, one with the taken key, one in a missing group, one
    // naming a missing child; all at once, so that they queue for the writer together.
    let mut drafts = Vec::new();
    for i in 0..CREATES {
        let mut draft = match i {
            7 => spec(Some("taken".into())),
            11 => spec(Some(format!("own-{i}"))),
            _ => spec(None),
        }
        .validate(None, "UTC", group.id)
        .unwrap();
        match i {
            13 => draft.group_id = group.id + 1_000,
            17 => draft.child_job_ids = vec![taken.id + 1_000_000],
            _ => {}
        }
        drafts.push(draft);
    }
    let answers = futures::future::join_all(drafts.iter().map(|d| store.insert_job(d, "test"))).await;

    let mut ids = HashSet::new();
    for (i, answer) in answers.into_iter().enumerate() {
        match (i, answer) {
            (7, Err(StoreError::Invalid(e))) => assert!(e.to_string().contains("taken"), "{e}"),
            (13, Err(StoreError::Invalid(e))) => assert!(e.to_string().contains("does not exist"), "{e}"),
            (17, Err(StoreError::Invalid(e))) => assert!(e.to_string().contains("does not exist"), "{e}"),
            (7 | 13 | 17, other) => panic!("create {i} should have been refused, got {other:?}"),
            (_, Err(e)) => panic!("create {i} failed beside a bad neighbour: {e}"),
            (_, Ok(job)) => {
                assert!(ids.insert(job.id), "job {} answered twice", job.id);
                assert_eq!(job.partition, job.id % PARTITIONS, "job {} partition", job.id);
                let expected_key = if i == 11 {
                    format!("own-{i}")
                } else {
                    format!("job-{}", job.id)
                };
                assert_eq!(job.key, expected_key);
                assert!(job.running && job.next_fire_at > 0, "job {} started", job.id);
            }
        }
    }
    assert_eq!(ids.len(), CREATES - 3);
    // Nothing more was written than the answers say: the refused creates left no row.
    let listed = store.list_jobs(Some(group.id), None, 0, 1_000).await.unwrap();
    assert_eq!(listed.len(), CREATES - 3 + 1, "jobs in the group");
    db.drop_db().await;
}

#[tokio::test]
async fn racing_creates_sqlite() {
    racing_creates(Db::Sqlite).await;
}

#[tokio::test]
async fn racing_creates_mysql() {
    racing_creates(Db::MySql).await;
}

#[tokio::test]
async fn racing_creates_postgres() {
    racing_creates(Db::Postgres).await;
}
