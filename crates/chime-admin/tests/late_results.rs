//! A success reported for a run the lost-run sweep had failed, on every database, through the
//! results writer's store (`Store::record_batch`): the run becomes a success; the retry its loss
//! started is withdrawn if it was not sent (and the send's mark refuses it), or runs on causing
//! nothing more if it was; the run's child jobs are fired once, not when a retry of it succeeded
//! and fired them already. A failure the executor reported, a killed run, a late failure and a
//! workflow node's run keep what was recorded. A verdict and a success in one batch: the success.

mod common;

use chime_admin::follow_up::withdrawn_msg;
use chime_admin::model::{Job, JobSpec, RunStatus};
use chime_admin::store::{alarm_status, HandleOutcome, NewRun, Recorded, SendMark, Store, TriggerOutcome};
use chime_protocol::messages::JOB_RESULT_LOST;
use chime_protocol::TriggerType;
use common::{Db, TestDb};

fn result(run_id: i64, code: i64, msg: &str) -> HandleOutcome {
    HandleOutcome {
        run_id,
        code,
        msg: Some(msg.into()),
        retry: true,
        lost: false,
    }
}

/// The lost-run sweep's verdict on `run_id`.
fn lost(run_id: i64) -> HandleOutcome {
    HandleOutcome {
        lost: true,
        ..result(run_id, 500, JOB_RESULT_LOST)
    }
}

struct Fixture {
    store: Store,
    /// Two retries, one child job.
    parent: Job,
    child: Job,
    /// One retry, no children.
    plain: Job,
}

impl Fixture {
    async fn new(db: &TestDb) -> Fixture {
        let store = Store::connect(&db.url).await.unwrap();
        let group = common::insert_manual_group(&store, "late").await;
        let spec = |children: Option<Vec<i64>>, retries: i64| JobSpec {
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
        let insert = |spec: JobSpec| {
            let store = store.clone();
            async move {
                let draft = spec.validate(None, "UTC", group.id).unwrap();
                store.insert_job(&draft, "test").await.unwrap()
            }
        };
        let child = insert(spec(None, 0)).await;
        let parent = insert(spec(Some(vec![child.id]), 2)).await;
        let plain = insert(spec(None, 1)).await;
        Fixture {
            store,
            parent,
            child,
            plain,
        }
    }

    /// A run of `job` (of `trigger_type`), sent to its executor.
    async fn sent_run(&self, job: &Job, trigger_type: TriggerType) -> i64 {
        let t = self
            .store
            .insert_runs(&[NewRun::of_job(job, trigger_type, 1_000, None)])
            .await
            .unwrap();
        self.sent(t[0].id, job.id, trigger_type).await;
        t[0].id
    }

    /// Records the trigger result (accepted) of run `id` of job `job`, of `trigger_type` (a
    /// trigger result records the type the run was sent as).
    async fn sent(&self, id: i64, job: i64, trigger_type: TriggerType) {
        let sent = TriggerOutcome {
            run_id: id,
            job_id: job,
            triggered_at: 1_000,
            address: "http://127.0.0.1:1".into(),
            code: 200,
            msg: "sent".into(),
            shard_total: 1,
            trigger_type,
        };
        self.store.record_outcomes(&[sent], &[]).await.unwrap();
    }

    async fn record(&self, handles: &[HandleOutcome]) -> Recorded {
        self.store.record_batch(&[], handles).await.unwrap()
    }

    /// Fails run `id` as lost; returns the id of the retry this made.
    async fn lose(&self, id: i64) -> i64 {
        let r = self.record(&[lost(id)]).await;
        assert_eq!(r.follow_ups.len(), 1, "a retry");
        r.follow_ups[0].id
    }

    async fn alarm_status(&self, id: i64) -> i64 {
        self.store.alarm_statuses(&[id]).await.unwrap()[0].1
    }
}

async fn late_successes(kind: Db) {
    let db = TestDb::new(kind).await;
    let f = Fixture::new(&db).await;
    let s = &f.store;

    // A lost run whose retry was not sent yet: withdrawn, and the child job fired.
    let a = f.sent_run(&f.parent, TriggerType::Api).await;
    let a1 = f.lose(a).await;
    assert!(s.run(a).await.unwrap().handle_msg.starts_with(JOB_RESULT_LOST));
    let r = f.record(&[result(a, 200, "done after all")]).await;
    let run = s.run(a).await.unwrap();
    assert_eq!((run.status, run.handle_code), (RunStatus::Success, 200), "{kind:?}");
    assert!(run.lost_at.is_some(), "{kind:?}: the loss is still on record");
    assert!(
        run.handle_msg
            .starts_with("done after all<br>Reported after this run had been failed as lost")
            && run.handle_msg.contains(&format!("Retry run {a1} withdrawn"))
            && run.handle_msg.contains("Trigger success"),
        "{kind:?}: {}",
        run.handle_msg
    );
    assert_eq!(r.withdrawn, [a1], "{kind:?}");
    assert_eq!(r.follow_ups.len(), 1, "{kind:?}: the child run");
    assert_eq!(r.follow_ups[0].job_id, f.child.id);
    let retry = s.run(a1).await.unwrap();
    assert_eq!(
        (retry.status, retry.trigger_msg.as_str()),
        (RunStatus::Skipped, withdrawn_msg(a).as_str()),
        "{kind:?}"
    );
    assert_eq!(f.alarm_status(a1).await, alarm_status::NOT_NEEDED);
    // No admin may send it any more: the send's mark refuses it.
    let mark = SendMark {
        run_id: a1,
        token: -7,
        address: "http://127.0.0.1:1".into(),
    };
    assert!(s.mark_sending(&[mark], 2_000).await.unwrap().is_empty(), "{kind:?}");
    // The same success again (an executor re-sending): nothing more.
    let r = f.record(&[result(a, 200, "done after all")]).await;
    assert!(r.follow_ups.is_empty() && r.withdrawn.is_empty(), "{kind:?}: {r:?}");

    // A lost run whose retry is running: the retry goes on, and its failure causes nothing.
    let b = f.sent_run(&f.plain, TriggerType::Api).await;
    let b1 = f.lose(b).await;
    f.sent(b1, f.plain.id, TriggerType::Retry).await;
    let r = f.record(&[result(b, 200, "ok")]).await;
    assert!(r.follow_ups.is_empty() && r.withdrawn.is_empty(), "{kind:?}: {r:?}");
    let run = s.run(b).await.unwrap();
    assert_eq!(run.status, RunStatus::Success, "{kind:?}");
    assert!(
        run.handle_msg.contains(&format!("Retry run {b1} was sent already")),
        "{}",
        run.handle_msg
    );
    assert_eq!(s.run(b1).await.unwrap().status, RunStatus::Running, "{kind:?}");
    let r = f.record(&[result(b1, 500, "the retry failed")]).await;
    assert!(r.follow_ups.is_empty(), "{kind:?}: no retry of the superseded retry");
    assert_eq!(s.run(b1).await.unwrap().status, RunStatus::Failed);
    assert!(
        s.claim_alarms(&[b1]).await.unwrap().is_empty(),
        "{kind:?}: no alarm for a superseded retry"
    );
    assert_eq!(f.alarm_status(b1).await, alarm_status::NOT_NEEDED);

    // A lost run whose retry succeeded already and fired the child: not fired again.
    let c = f.sent_run(&f.parent, TriggerType::Api).await;
    let c1 = f.lose(c).await;
    f.sent(c1, f.parent.id, TriggerType::Retry).await;
    let r = f.record(&[result(c1, 200, "the retry ran")]).await;
    assert_eq!(r.follow_ups.len(), 1, "{kind:?}: the retry fired the child");
    let r = f.record(&[result(c, 200, "ran too")]).await;
    assert!(r.follow_ups.is_empty(), "{kind:?}: {r:?}");
    let run = s.run(c).await.unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert!(
        run.handle_msg
            .contains(&format!("retry run {c1} succeeded and fired them")),
        "{}",
        run.handle_msg
    );

    // A failure the executor reported is no loss: a success afterwards changes nothing.
    let d = f.sent_run(&f.plain, TriggerType::Api).await;
    f.record(&[result(d, 500, "failed")]).await;
    f.record(&[result(d, 200, "odd")]).await;
    assert_eq!(s.run(d).await.unwrap().handle_msg, "failed", "{kind:?}");

    // A lost run a user's kill reached: killed it stays.
    let e = f.sent_run(&f.plain, TriggerType::Api).await;
    f.lose(e).await;
    assert!(s.mark_killed(e, "someone").await.unwrap());
    f.record(&[result(e, 200, "late")]).await;
    assert_eq!(s.run(e).await.unwrap().status, RunStatus::Killed, "{kind:?}");

    // A late failure of a lost run changes nothing.
    let g = f.sent_run(&f.plain, TriggerType::Api).await;
    f.lose(g).await;
    let r = f.record(&[result(g, 500, "failed late")]).await;
    assert!(r.follow_ups.is_empty());
    assert!(
        s.run(g).await.unwrap().handle_msg.starts_with(JOB_RESULT_LOST),
        "{kind:?}"
    );

    // The verdict and a success in one batch, either order: the success, and no retry.
    for order in [0, 1] {
        let h = f.sent_run(&f.plain, TriggerType::Api).await;
        let mut batch = vec![lost(h), result(h, 200, "just in time")];
        if order == 1 {
            batch.reverse();
        }
        let r = f.record(&batch).await;
        assert!(r.follow_ups.is_empty(), "{kind:?}: no retry");
        let run = s.run(h).await.unwrap();
        assert_eq!(
            (run.status, run.handle_msg.as_str()),
            (RunStatus::Success, "just in time")
        );
    }

    // A workflow node's run, and a retry of one: the loss decided the node; kept.
    let w = f.sent_run(&f.parent, TriggerType::Workflow).await;
    let w1 = f.lose(w).await;
    f.sent(w1, f.parent.id, TriggerType::Retry).await;
    let w2 = f.lose(w1).await;
    let r = f.record(&[result(w1, 200, "late"), result(w, 200, "late")]).await;
    assert!(r.follow_ups.is_empty() && r.withdrawn.is_empty(), "{kind:?}: {r:?}");
    for id in [w, w1] {
        assert_eq!(s.run(id).await.unwrap().status, RunStatus::Failed, "{kind:?}: run {id}");
    }
    assert_eq!(s.run(w2).await.unwrap().status, RunStatus::Pending, "{kind:?}");

    s.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn late_successes_sqlite() {
    late_successes(Db::Sqlite).await;
}

#[tokio::test]
async fn late_successes_mariadb() {
    late_successes(Db::MySql).await;
}

#[tokio::test]
async fn late_successes_postgres() {
    late_successes(Db::Postgres).await;
}
