//! The fencing of sends between admins, on every database: a run is marked as being sent
//! (`Store::mark_sending`) under the epoch of its partition's lease, and the database refuses
//! the mark of an admin whose lease lapsed or changed hands — a frozen or cut-off admin's send
//! is refused even if it tries. A run marked but without a trigger result was possibly sent:
//! recovery does not send it again, and the lost-run sweep looks at it.

mod common;

use chime_admin::model::{now_ms, JobSpec};
use chime_admin::store::{Lease, NewRun, SendMark, Store};
use chime_protocol::TriggerType;
use common::{Db, TestDb};
use std::sync::atomic::{AtomicI64, Ordering};

fn mark(run_id: i64, token: i64, address: &str) -> SendMark {
    SendMark {
        run_id,
        token,
        address: address.to_owned(),
    }
}

/// A later stamp for each call, as the admin's marking task gives them.
fn stamp() -> i64 {
    static LAST: AtomicI64 = AtomicI64::new(0);
    let mut last = LAST.load(Ordering::SeqCst);
    loop {
        let next = now_ms().max(last + 1);
        match LAST.compare_exchange(last, next, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return next,
            Err(current) => last = current,
        }
    }
}

async fn lease_of(store: &Store, partition: i64) -> (Lease, i64) {
    let table = store.lease_table().await.unwrap();
    let lease = table.leases.into_iter().find(|l| l.partition == partition).unwrap();
    (lease, table.now)
}

async fn stale_marks_are_refused(kind: Db) {
    let db = TestDb::new(kind).await;
    let store = Store::connect(&db.url).await.unwrap();
    let group = common::insert_manual_group(&store, "fencing").await;
    let spec = JobSpec {
        group_id: Some(group.id),
        handler: Some("h".into()),
        schedule_type: Some("NONE".into()),
        ..Default::default()
    };
    let job = store
        .insert_job(&spec.validate(None, "UTC", group.id).unwrap(), "test")
        .await
        .unwrap();
    let runs = store
        .insert_runs(&vec![NewRun::of_job(&job, TriggerType::Cron, now_ms(), None); 5])
        .await
        .unwrap();
    let ids: Vec<i64> = runs.iter().map(|t| t.id).collect();
    let p = job.partition;

    // Admin A takes the partition's lease: a new epoch.
    let (lease, now) = lease_of(&store, p).await;
    let a = store
        .acquire_lease(&lease, "a", now, now + 60_000, false)
        .await
        .unwrap();
    let a = a.expect("a free lease is taken");
    assert_eq!(a, lease.epoch + 1, "{kind:?}");
    assert_eq!(
        store
            .mark_sending(&[mark(ids[0], a, "http://a")], stamp())
            .await
            .unwrap(),
        vec![ids[0]],
        "{kind:?}: the holder's mark is taken"
    );
    assert!(
        store
            .mark_sending(&[mark(ids[0], a, "http://a")], stamp())
            .await
            .unwrap()
            .is_empty(),
        "{kind:?}: a run is marked once"
    );
    // Renewing keeps the epoch.
    let (lease, now) = lease_of(&store, p).await;
    assert_eq!(
        store
            .acquire_lease(&lease, "a", now, now + 60_000, false)
            .await
            .unwrap(),
        Some(a)
    );

    // A's lease lapses by the database's clock (A is frozen or cut off): its marks are refused
    // although nobody took the lease yet.
    let (lease, now) = lease_of(&store, p).await;
    store.acquire_lease(&lease, "a", now, now - 1, false).await.unwrap();
    assert!(
        store
            .mark_sending(&[mark(ids[1], a, "http://a")], stamp())
            .await
            .unwrap()
            .is_empty(),
        "{kind:?}: a lapsed lease fences its holder"
    );
    // Admin B takes it over: a new epoch, and A's old one is refused for good.
    let (lease, now) = lease_of(&store, p).await;
    let b = store
        .acquire_lease(&lease, "b", now, now + 60_000, false)
        .await
        .unwrap();
    let b = b.expect("a lapsed lease is taken");
    assert_eq!(b, a + 1, "{kind:?}");
    assert!(
        store
            .mark_sending(&[mark(ids[1], a, "http://a")], stamp())
            .await
            .unwrap()
            .is_empty(),
        "{kind:?}: the previous holder's epoch is refused"
    );
    // A lease read before B took it cannot be taken with the epoch read then.
    assert_eq!(
        store.acquire_lease(&lease, "a", now, now + 60_000, true).await.unwrap(),
        None
    );
    // A batch with a refused run and two new ones: exactly the new ones are B's.
    let marked = store
        .mark_sending(
            &[
                mark(ids[0], b, "http://b"),
                mark(ids[1], b, "http://b"),
                mark(ids[2], b, "http://b"),
            ],
            stamp(),
        )
        .await
        .unwrap();
    assert_eq!(marked, vec![ids[1], ids[2]], "{kind:?}");

    // Runs sent outside the leases carry a process's own (negative) token: first come, only.
    assert_eq!(
        store
            .mark_sending(&[mark(ids[3], -7, "http://c")], stamp())
            .await
            .unwrap(),
        vec![ids[3]]
    );
    assert!(store
        .mark_sending(&[mark(ids[3], -8, "http://d")], stamp())
        .await
        .unwrap()
        .is_empty());

    // Recovery resends only what nobody marked; the marked runs are the lost-run sweep's.
    let pending: Vec<i64> = store.pending_runs(&[p]).await.unwrap().iter().map(|t| t.id).collect();
    assert_eq!(pending, vec![ids[4]], "{kind:?}: marked runs were possibly sent");
    let unfinished = store.unfinished_runs(now_ms() + 1_000, 0, 100).await.unwrap();
    let seen: Vec<(i64, &str)> = unfinished.iter().map(|r| (r.id, r.address.as_str())).collect();
    assert_eq!(
        seen,
        vec![
            (ids[0], "http://a"),
            (ids[1], "http://b"),
            (ids[2], "http://b"),
            (ids[3], "http://c")
        ],
        "{kind:?}: possibly sent, to the executor of the mark"
    );
    db.drop_db().await;
}

#[tokio::test]
async fn stale_marks_are_refused_sqlite() {
    stale_marks_are_refused(Db::Sqlite).await;
}

#[tokio::test]
async fn stale_marks_are_refused_mysql() {
    stale_marks_are_refused(Db::MySql).await;
}

#[tokio::test]
async fn stale_marks_are_refused_postgres() {
    stale_marks_are_refused(Db::Postgres).await;
}
