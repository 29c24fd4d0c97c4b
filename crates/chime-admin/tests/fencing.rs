//! The fencing of sends between admins, on every database: a run is marked as being sent
//! (`Store::mark_sending`) under the epoch of its partition's lease, and the database refuses
//! the mark of an admin whose lease lapsed or changed hands — a frozen or cut-off admin's send
//! is refused even if it tries. A run marked but without a trigger result was possibly sent:
//! the partition's next holder asks its executor and sends it again only if it never arrived.

mod common;

use chime_admin::model::{now_ms, GroupSpec, Job, JobSpec};
use chime_admin::store::{Lease, NewRun, SendMark, Store};
use chime_protocol::TriggerType;
use common::executor::TestExecutor;
use common::{Api, Db, TestDb};
use serde_json::json;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

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

/// A job of `group_id` running `handler`, with `n` scheduled runs due now (their ids).
async fn job_with_runs(store: &Store, group_id: i64, handler: &str, n: usize) -> (Job, Vec<i64>) {
    let spec = JobSpec {
        group_id: Some(group_id),
        task: chime_admin::api::JobTaskPatch {
            handler: Some(handler.into()),
            ..Default::default()
        },
        schedule: chime_admin::api::SchedulePatch {
            schedule_type: Some("NONE".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let job = store
        .insert_job(&spec.validate(None, "UTC", group_id).unwrap(), "test")
        .await
        .unwrap();
    let runs = store
        .insert_runs(&vec![NewRun::of_job(&job, TriggerType::Cron, now_ms(), None); n])
        .await
        .unwrap();
    (job, runs.iter().map(|t| t.id).collect())
}

/// Marks `marks` with a new stamp; the runs the database took.
async fn marked(store: &Store, marks: &[SendMark]) -> Vec<i64> {
    store.mark_sending(marks, stamp()).await.unwrap()
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
    let (job, ids) = job_with_runs(&store, group.id, "h", 5).await;
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
        marked(&store, &[mark(ids[0], a, "http://a")]).await,
        vec![ids[0]],
        "{kind:?}: the holder's mark is taken"
    );
    assert!(
        marked(&store, &[mark(ids[0], a, "http://a")]).await.is_empty(),
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
        marked(&store, &[mark(ids[1], a, "http://a")]).await.is_empty(),
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
        marked(&store, &[mark(ids[1], a, "http://a")]).await.is_empty(),
        "{kind:?}: the previous holder's epoch is refused"
    );
    // A lease read before B took it cannot be taken with the epoch read then.
    assert_eq!(
        store.acquire_lease(&lease, "a", now, now + 60_000, true).await.unwrap(),
        None
    );
    // A batch with a refused run and two new ones: exactly the new ones are B's.
    let taken = marked(
        &store,
        &[
            mark(ids[0], b, "http://b"),
            mark(ids[1], b, "http://b"),
            mark(ids[2], b, "http://b"),
        ],
    )
    .await;
    assert_eq!(taken, vec![ids[1], ids[2]], "{kind:?}");

    // Runs sent outside the leases carry a process's own (negative) token: first come, only.
    assert_eq!(marked(&store, &[mark(ids[3], -7, "http://c")]).await, vec![ids[3]]);
    assert!(marked(&store, &[mark(ids[3], -8, "http://d")]).await.is_empty());

    // Recovery loads as pending only what nobody marked.
    let pending: Vec<i64> = store.pending_runs(&[p]).await.unwrap().iter().map(|t| t.id).collect();
    assert_eq!(pending, vec![ids[4]], "{kind:?}: marked runs were possibly sent");
    // What the next holder settles with the executors: the scheduled runs marked under a
    // lease epoch (ids[3] carries a process's token).
    let mut settled: Vec<(i64, i64, &str)> = Vec::new();
    let found = store.marked_runs(&[p]).await.unwrap();
    for m in &found {
        assert_eq!(m.partition, p);
        settled.push((m.ticket.id, m.token, m.address.as_str()));
    }
    settled.sort_unstable();
    assert_eq!(
        settled,
        vec![
            (ids[0], a, "http://a"),
            (ids[1], b, "http://b"),
            (ids[2], b, "http://b")
        ],
        "{kind:?}"
    );
    // Taking a mark back: only the current holder, only the mark as it was read.
    assert!(
        !store.unmark(ids[0], a, a).await.unwrap(),
        "{kind:?}: not under a lost lease"
    );
    assert!(!store.unmark(ids[0], b, b).await.unwrap(), "{kind:?}: not another mark");
    assert!(store.unmark(ids[0], a, b).await.unwrap(), "{kind:?}");
    assert!(!store.unmark(ids[0], a, b).await.unwrap(), "{kind:?}: once");
    let mut pending: Vec<i64> = store.pending_runs(&[p]).await.unwrap().iter().map(|t| t.id).collect();
    pending.sort_unstable();
    assert_eq!(pending, vec![ids[0], ids[4]], "{kind:?}: pending again");
    // Marked again by its holder, as the send that follows does.
    assert_eq!(marked(&store, &[mark(ids[0], b, "http://b")]).await, vec![ids[0]]);
    let unfinished = store.unfinished_runs(now_ms() + 1_000, 0, 100).await.unwrap();
    let seen: Vec<(i64, &str)> = unfinished.iter().map(|r| (r.id, r.address.as_str())).collect();
    assert_eq!(
        seen,
        vec![
            (ids[0], "http://b"),
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

/// An admin marked two scheduled runs and stopped: one request had reached the executor, the
/// other never left. The admin that takes the partition over asks the executor, sends the
/// second, and does not send the first again: each arrives exactly once.
async fn the_next_holder_sends_what_never_arrived(kind: Db) {
    let db = TestDb::new(kind).await;
    let store = Store::connect(&db.url).await.unwrap();
    // The admin's port is chosen first: the executor reports its results there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}/xxl-job-admin");
    let ex = TestExecutor::start(&base, "possibly-sent", common::ACCESS_TOKEN).await;
    let group = GroupSpec {
        app_name: Some("possibly-sent".into()),
        addresses: Some(vec![ex.address.clone()]),
        ..Default::default()
    }
    .validate(None, &Default::default())
    .unwrap();
    let group = store.insert_group(&group).await.unwrap();
    let (job, runs) = job_with_runs(&store, group.id, "ok", 2).await;
    let (arrived, lost) = (runs[0], runs[1]);

    // The gone admin held the partition for one more second and marked both runs.
    let (lease, now) = lease_of(&store, job.partition).await;
    let epoch = store
        .acquire_lease(&lease, "gone", now, now + 1_000, false)
        .await
        .unwrap()
        .expect("a free lease is taken");
    let at = stamp();
    let marks = [mark(arrived, epoch, &ex.address), mark(lost, epoch, &ex.address)];
    assert_eq!(store.mark_sending(&marks, at).await.unwrap().len(), 2, "{kind:?}");
    // Its request for the first one went out; it stopped before the second.
    let trigger = json!({
        "jobId": job.id, "executorHandler": "ok", "executorParams": "", "executorBlockStrategy": "SERIAL_EXECUTION",
        "executorTimeout": 0, "logId": arrived, "logDateTime": at, "glueType": "BEAN", "glueSource": "",
        "glueUpdatetime": 0, "broadcastIndex": 0, "broadcastTotal": 1
    });
    let reply: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/run", ex.address))
        .header("XXL-JOB-ACCESS-TOKEN", common::ACCESS_TOKEN)
        .json(&trigger)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply["code"], 200, "{reply}");
    tokio::time::sleep(Duration::from_millis(1_200)).await;

    let mut config = common::config(&db.url);
    config.listen = format!("127.0.0.1:{port}").parse().unwrap();
    let admin = chime_admin::start(config).await.expect("admin starts");
    let api = Api::new(admin.local_addr);
    let done = api
        .wait_runs(job.id, 60, "both runs reported", |runs| {
            runs.len() == 2 && runs.iter().all(|r| r["status"] == "success")
        })
        .await;
    // A moment more, for a second delivery that should not come.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut received = ex.log_ids();
    received.sort_unstable();
    assert_eq!(
        received,
        vec![arrived, lost],
        "{kind:?}: each run arrived once: {done:?}"
    );
    let resent = done.iter().find(|r| r["id"] == lost).unwrap();
    assert_eq!(resent["trigger_code"], 200, "{kind:?}: {resent}");
    assert_eq!(resent["trigger_type"], "CRON", "{kind:?}: {resent}");
    admin.shutdown().await;
    ex.kill();
    db.drop_db().await;
}

#[tokio::test]
async fn the_next_holder_sends_what_never_arrived_mysql() {
    the_next_holder_sends_what_never_arrived(Db::MySql).await;
}

#[tokio::test]
async fn the_next_holder_sends_what_never_arrived_postgres() {
    the_next_holder_sends_what_never_arrived(Db::Postgres).await;
}
