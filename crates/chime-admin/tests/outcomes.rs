//! Trigger results and run results that reach the results writer in the same batch, on every
//! database. A successful run of a job without children has both written in one `UPDATE`
//! (`Store::record_outcomes`); everything else must come out as if they had been written
//! one after the other: children fired, a run already finished left as it was, a run reported
//! twice recorded once. What a batch reports it wrote (the ends the workflow loop moves
//! instances on from) is what the rows say.

mod common;

use chime_admin::model::JobSpec;
use chime_admin::store::{HandleOutcome, NewRun, Store, TriggerOutcome};
use chime_protocol::TriggerType;
use common::{Db, TestDb};

fn sent(run_id: i64, job_id: i64, code: i64) -> TriggerOutcome {
    TriggerOutcome {
        run_id,
        job_id,
        triggered_at: 1_000,
        address: "http://127.0.0.1:1".into(),
        code,
        msg: format!("report of {run_id}"),
        shard_total: 1,
        trigger_type: TriggerType::Api,
    }
}

fn result(run_id: i64, code: i64, msg: &str) -> HandleOutcome {
    HandleOutcome {
        run_id,
        code,
        msg: Some(msg.into()),
        retry: true,
        lost: false,
    }
}

async fn one_batch(kind: Db) {
    let db = TestDb::new(kind).await;
    let store = Store::connect(&db.url).await.unwrap();
    let group = common::insert_manual_group(&store, "outcomes").await;
    let spec = |children: Option<Vec<i64>>| JobSpec {
        group_id: Some(group.id),
        task: chime_admin::api::JobTaskPatch {
            handler: Some("h".into()),
            ..Default::default()
        },
        schedule: chime_admin::api::SchedulePatch {
            schedule_type: Some("NONE".into()),
            ..Default::default()
        },
        child_job_ids: children,
        ..Default::default()
    };
    let plain = store
        .insert_job(&spec(None).validate(None, "UTC", group.id).unwrap(), "test")
        .await
        .unwrap();
    let child = store
        .insert_job(&spec(None).validate(None, "UTC", group.id).unwrap(), "test")
        .await
        .unwrap();
    let parent = store
        .insert_job(
            &spec(Some(vec![child.id])).validate(None, "UTC", group.id).unwrap(),
            "test",
        )
        .await
        .unwrap();
    let new = |job: &chime_admin::model::Job| NewRun::of_job(job, TriggerType::Api, 1_000, None);
    let t = store
        .insert_runs(&[new(&plain), new(&parent), new(&plain), new(&plain), new(&plain)])
        .await
        .unwrap();
    let (simple, with_child, killed, twice, failed_send) = (t[0].id, t[1].id, t[2].id, t[3].id, t[4].id);
    // Killed first, in an earlier batch.
    store
        .record_outcomes(&[], &[result(killed, 500, "killed by a user")])
        .await
        .unwrap();

    let triggers = [
        sent(simple, plain.id, 200),
        sent(with_child, parent.id, 200),
        sent(killed, plain.id, 200),
        sent(twice, plain.id, 200),
        sent(failed_send, plain.id, 500),
    ];
    let handles = [
        result(simple, 200, "ok"),
        result(with_child, 200, "ok"),
        result(killed, 200, "late success"),
        result(twice, 200, "first"),
        result(twice, 500, "second"),
        result(failed_send, 200, "odd but recorded"),
    ];
    let recorded = store.record_batch(&triggers, &handles).await.unwrap();
    let follow_ups = recorded.follow_ups;

    let run = |id| {
        let store = store.clone();
        async move { store.run(id).await.unwrap() }
    };
    let r = run(simple).await;
    assert_eq!(
        (r.trigger_code, r.handle_code, r.handle_msg.as_str()),
        (200, 200, "ok"),
        "{kind:?}"
    );
    assert_eq!(
        (r.executor_address.as_str(), r.trigger_msg.as_str(), r.triggered_at),
        ("http://127.0.0.1:1", format!("report of {simple}").as_str(), 1_000),
        "{kind:?}"
    );
    assert!(r.handled_at > 0, "{kind:?}");

    let r = run(with_child).await;
    assert_eq!((r.trigger_code, r.handle_code), (200, 200), "{kind:?}");
    assert!(r.handle_msg.contains("Trigger child job"), "{kind:?}: {}", r.handle_msg);
    assert_eq!(follow_ups.len(), 1, "{kind:?}: one child run");
    assert_eq!(follow_ups[0].job_id, child.id, "{kind:?}");

    // The trigger result is written; the earlier result stays.
    let r = run(killed).await;
    assert_eq!(
        (r.trigger_code, r.handle_code, r.handle_msg.as_str()),
        (200, 500, "killed by a user"),
        "{kind:?}"
    );
    assert_eq!(r.trigger_msg, format!("report of {killed}"), "{kind:?}");

    let r = run(twice).await;
    assert_eq!(
        (r.trigger_code, r.handle_code, r.handle_msg.as_str()),
        (200, 200, "first"),
        "{kind:?}"
    );

    let r = run(failed_send).await;
    assert_eq!((r.trigger_code, r.handle_code), (500, 200), "{kind:?}");

    // What the batch says it wrote is what the rows say, and a run that had its result
    // before (the kill) is not among it: the workflow loop takes these as the runs' ends.
    assert!(
        recorded.written.iter().all(|w| w.run_id != killed),
        "{kind:?}: {:?}",
        recorded.written
    );
    for w in &recorded.written {
        let r = run(w.run_id).await;
        assert_eq!(
            (r.handle_code, r.handle_msg.as_str(), r.handled_at),
            (w.code, w.msg.as_str(), w.at),
            "{kind:?}"
        );
    }

    // A batch whose every result is new reports every one written: `a` sent and succeeded in
    // it (the send and the result in one write), `b` sent and failed in it and `c` sent in an
    // earlier batch (their results in the multi-row write of results that cause nothing).
    let t = store
        .insert_runs(&[new(&plain), new(&plain), new(&plain)])
        .await
        .unwrap();
    let (a, b, c) = (t[0].id, t[1].id, t[2].id);
    store.record_outcomes(&[sent(c, plain.id, 200)], &[]).await.unwrap();
    let recorded = store
        .record_batch(
            &[sent(a, plain.id, 200), sent(b, plain.id, 200)],
            &[
                result(a, 200, "a done"),
                result(b, 500, "b failed"),
                result(c, 200, "c done"),
            ],
        )
        .await
        .unwrap();
    let mut written: Vec<(i64, i64, &str)> = recorded
        .written
        .iter()
        .map(|w| (w.run_id, w.code, w.msg.as_str()))
        .collect();
    written.sort_unstable();
    assert_eq!(
        written,
        [(a, 200, "a done"), (b, 500, "b failed"), (c, 200, "c done")],
        "{kind:?}"
    );
    for w in &recorded.written {
        let r = run(w.run_id).await;
        assert_eq!((r.handle_code, r.handled_at), (w.code, w.at), "{kind:?}");
    }

    store.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn one_batch_sqlite() {
    one_batch(Db::Sqlite).await;
}

#[tokio::test]
async fn one_batch_mysql() {
    one_batch(Db::MySql).await;
}

#[tokio::test]
async fn one_batch_postgres() {
    one_batch(Db::Postgres).await;
}
