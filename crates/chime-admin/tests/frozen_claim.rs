//! An admin frozen inside a claim (SIGSTOP, a paused VM, a cut network) holds the row locks of
//! the jobs it was claiming. On PostgreSQL and MariaDB the server ends such a transaction once
//! its client has sent nothing for `HELD_TRANSACTION_LIMIT` (set on every session by
//! `Store::connect`), so the admin that took the partitions over claims those jobs without
//! waiting for the frozen one, and the frozen one claims nothing when it wakes.
//!
//! The freeze is made exact here rather than by a signal at a random moment: the first claim's
//! fire planner, which runs between the claim's locking read of the due jobs and its writes,
//! blocks its thread, so its transaction sends nothing while it holds the locks. MySQL has no
//! such server setting (`docs/admin.md`); SQLite has one writer in one process.

mod common;

use chime_admin::store::{FirePlan, NewRun, Store, HELD_TRANSACTION_LIMIT};
use chime_protocol::TriggerType;
use common::{Db, TestDb};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const OWNER: &str = "frozen-claim-test";
/// The fire every claim here makes of each job.
const FIRE_KEY: i64 = 1_000;
/// How long the first admin stays frozen: well past the server's limit, so that a second
/// claim that waited for its locks would finish only after it woke.
const FROZEN: Duration = Duration::from_secs(HELD_TRANSACTION_LIMIT.as_secs() * 5);

/// Claims every due job's fire [`FIRE_KEY`]; `before_planning` runs when the first job's fire
/// is planned, inside the claim's transaction, with the due jobs' rows locked.
async fn claim(store: &Store, mut before_planning: impl FnMut()) -> chime_admin::store::StoreResult<Vec<i64>> {
    let mut cache = HashMap::new();
    let ready: Vec<i64> = (0..chime_admin::store::PARTITIONS).collect();
    let mut first = true;
    let claimed = store
        .claim_due_fires(OWNER, &ready, 10, 1000, &mut cache, |job| {
            if std::mem::take(&mut first) {
                before_planning();
            }
            FirePlan {
                runs: vec![NewRun::of_job(job, TriggerType::Cron, FIRE_KEY, Some(FIRE_KEY))],
                next_fire_at: 1_000_000,
                last_fire_at: FIRE_KEY,
            }
        })
        .await?;
    let mut jobs: Vec<i64> = claimed
        .jobs
        .iter()
        .filter(|(_, tickets)| !tickets.is_empty())
        .map(|(job, _)| job.id)
        .collect();
    jobs.sort_unstable();
    Ok(jobs)
}

async fn frozen_claim_releases_its_jobs(kind: Db) {
    let db = TestDb::new(kind).await;
    let taking_over = Store::connect(&db.url).await.unwrap();
    // Three running jobs, due, and every partition's lease held by `OWNER`.
    let mut jobs = common::leased_jobs(&taking_over, "frozen-claim", OWNER, 3).await;
    jobs.sort_unstable();
    common::make_every_job_due(&db.url).await;

    // The frozen admin on a thread and runtime of its own, as another process would be: its
    // block stops nothing of the admin that takes over.
    let locked = Arc::new(AtomicBool::new(false));
    let woke = Arc::new(AtomicBool::new(false));
    let frozen = std::thread::spawn({
        let (url, locked, woke) = (db.url.clone(), locked.clone(), woke.clone());
        move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let store = Store::connect(&url).await.unwrap();
                let claimed = claim(&store, || {
                    locked.store(true, Ordering::SeqCst);
                    // Nothing of this transaction reaches the server while the thread
                    // sleeps, as with a stopped process.
                    std::thread::sleep(FROZEN);
                    woke.store(true, Ordering::SeqCst);
                })
                .await
                .map_err(|e| e.to_string());
                store.close().await;
                claimed
            })
        }
    });
    while !locked.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Another admin claims the same jobs while the first is still frozen with their rows
    // locked: it must not wait for the first to wake.
    let claimed = claim(&taking_over, || {}).await.unwrap();
    assert!(
        !woke.load(Ordering::SeqCst),
        "{kind:?}: the second claim waited for the frozen admin's locks until it woke"
    );
    assert_eq!(claimed, jobs, "{kind:?}: the second admin claims every due job");

    // The frozen admin's transaction was ended: it claims nothing when it wakes.
    let after = tokio::task::spawn_blocking(move || frozen.join().unwrap())
        .await
        .unwrap();
    assert!(
        after.as_ref().map_or(true, |jobs| jobs.is_empty()),
        "{kind:?}: the frozen admin claimed {after:?} after waking"
    );

    // One run of the fire per job, the second admin's.
    let (pending, _) = taking_over.count_open_runs().await.unwrap();
    assert_eq!(pending, jobs.len() as i64, "{kind:?}: each job's fire stored once");
    taking_over.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn frozen_claim_releases_its_jobs_postgres() {
    frozen_claim_releases_its_jobs(Db::Postgres).await;
}

#[tokio::test]
async fn frozen_claim_releases_its_jobs_mariadb() {
    frozen_claim_releases_its_jobs(Db::MySql).await;
}
