//! Linked executors behind NAT, end to end: real `chime executor --link` processes, each in a
//! network namespace of its own behind a router namespace that masquerades them (nftables), and
//! a real `chime admin` process on the host side of the router's uplink (see
//! `common::linked::Nat`). The executors reach the admin; the admin cannot reach them — the test
//! checks both — and everything the admin does to an executor goes down the link.
//!
//! - `behind_nat`: two executors link (the admin sees them come from the router's address); a
//!   cron job runs every second, a manual trigger carries its parameter into the run's log
//!   (read through the admin), a long run is killed, the log of a running run is read while it
//!   runs, a sharding broadcast reaches both executors with shards 0 and 1 of 2, and a run past
//!   its timeout is failed.
//! - `link_cut`: the one executor's line is cut at the router for 30 s under a job firing every
//!   second (`FIRST`, no retries): every second still has exactly one run, the runs of the cut
//!   fail with a remoting error (nothing reaches the executor, so nothing is run), no run is
//!   executed twice, and once the executor has linked again every run succeeds.
//! - `cuts_of_both_kinds`: the line is cut for 15 s twice with its router port down and twice
//!   by an nftables rule that drops every packet silently; each time the executor finds its link
//!   dead during the cut and is dialing when the line returns, and runs succeed again (how soon
//!   is printed: docs/BENCHMARKS.md), none lost or run twice.
//!
//! Needs root, iproute2, nftables and python3 (for the TCP probes), as `scripts/test` provides.

mod common;

use common::linked::{tcp_connects_from_host, AdminProcess, Journal, LinkedExecutor, Nat, NsListener};
use common::{eventually, finished, status, succeeded, Api, Db, TestDb};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

const APP: &str = "lnk";

/// The current wall-clock time, epoch ms (the clock run rows are stamped with).
fn now_ms() -> i64 {
    chime_admin::model::now_ms()
}

/// An admin on SQLite on the host side of `nat`'s uplink, group [`APP`] created, and one linked
/// executor per executor namespace, all linked. Returns the admin, its API, the executors, the
/// database and the directory of the admin's log and the journal.
async fn start(nat: &Nat) -> (AdminProcess, Api, Vec<LinkedExecutor>, TestDb, tempfile::TempDir) {
    let db = TestDb::new(Db::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let at = SocketAddr::new(nat.host_ip.into(), common::process::free_port());
    let admin = AdminProcess::start(&db.url, at, "admin-nat", dir.path(), &[]).await;
    let api = admin.api();
    api.ok("/v1/groups", json!({"app_name": APP, "title": "behind NAT"}))
        .await;
    let executors: Vec<LinkedExecutor> = nat
        .executors
        .iter()
        .enumerate()
        .map(|(k, ns)| LinkedExecutor::start(&[admin.base()], APP, &format!("e{}", k + 1), Some(&ns.name)))
        .collect();
    let ids: Vec<&str> = executors.iter().map(|x| x.id.as_str()).collect();
    common::linked::wait_linked(&api, APP, &ids).await;
    (admin, api, executors, db, dir)
}

/// Lines of the admin's output saying executor `id` linked.
fn linked_lines(admin: &AdminProcess, id: &str) -> Vec<String> {
    admin
        .output()
        .lines()
        .filter(|l| l.contains("executor linked") && l.contains(&format!("executor={id} ")))
        .map(str::to_owned)
        .collect()
}

/// Creates a job from `body` (group and GLUE_SHELL defaults filled in); returns its id.
async fn job(api: &Api, body: Value) -> i64 {
    let mut spec = json!({"group": APP, "glue_type": "GLUE_SHELL", "description": "linked"});
    for (k, v) in body.as_object().unwrap() {
        spec[k] = v.clone();
    }
    api.ok("/v1/jobs", spec).await["id"].as_i64().unwrap()
}

/// Triggers `job` with `param`; returns the run id.
async fn trigger(api: &Api, job: i64, param: &str) -> i64 {
    api.ok(&format!("/v1/jobs/{job}/trigger"), json!({"param": param}))
        .await["run_id"]
        .as_i64()
        .unwrap()
}

/// The run's log read through the admin (from the executor, down its link).
async fn run_log(api: &Api, run: i64) -> (u16, Value) {
    api.get(&format!("/v1/runs/{run}/log?from_line=1")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn behind_nat() {
    let nat = Nat::create(2);
    let (admin, api, executors, db, dir) = start(&nat).await;

    // The admin cannot reach an executor: a port listening in the first executor's namespace
    // answers from the router, which has a route to it, and not from the host, which has none.
    let e1 = &nat.executors[0];
    let listener = NsListener::start(&e1.name, e1.ip, &nat.router).await;
    assert!(
        !tcp_connects_from_host(e1.ip, listener.port),
        "the host reached {}:{} in the executor's namespace: the test network is not a NAT",
        e1.ip,
        listener.port
    );
    drop(listener);
    // The admin sees the links come from the router's uplink address (the masquerade).
    for x in &executors {
        let lines = linked_lines(&admin, &x.id);
        assert!(
            !lines.is_empty() && lines.iter().all(|l| l.contains(&format!("{}:", nat.router_ip))),
            "{} linked from the router's address {}: {lines:?}\nadmin output:\n{}",
            x.id,
            nat.router_ip,
            admin.output()
        );
    }

    let journal = Journal::new(dir.path().join("journal"));

    // A cron job firing every second, ROUND over both executors.
    let cron = job(
        &api,
        json!({"schedule_type": "CRON", "schedule_expr": "* * * * * ?", "route_strategy": "ROUND",
               "glue_source": journal.script("echo cron run"), "running": true}),
    )
    .await;
    let runs = api
        .wait_runs(cron, 60, "6 successful cron runs", |r| {
            r.iter().filter(|r| succeeded(r)).count() >= 6
        })
        .await;
    let (s, _) = api.post(&format!("/v1/jobs/{cron}/stop"), json!({})).await;
    assert_eq!(s, 200);
    let on: HashSet<String> = runs
        .iter()
        .filter(|r| succeeded(r))
        .map(|r| {
            assert_eq!(r["trigger_type"], "CRON", "{r}");
            let ran = journal.of_run(r["id"].as_i64().unwrap());
            assert_eq!(ran.len(), 1, "run {} ran once at an executor: {ran:?}", r["id"]);
            assert_eq!(
                common::address_of(r),
                format!("link://{}", ran[0].executor),
                "the run ran where the admin sent it: {r}"
            );
            ran[0].executor.clone()
        })
        .collect();
    assert_eq!(on.len(), 2, "ROUND used both linked executors: {on:?}");

    // A manual trigger with a parameter: the script prints it, and the run's log, read through
    // the admin from the executor, shows it.
    let hello = format!("hello-{:08x}", rand::random::<u32>());
    let manual = job(
        &api,
        json!({"glue_source": journal.script("echo \"the parameter is $1\"")}),
    )
    .await;
    let run = trigger(&api, manual, &hello).await;
    let runs = api.wait_runs(manual, 30, "the manual run", |r| finished(r) == 1).await;
    assert_eq!(status(&runs[0]), "success", "{}", runs[0]);
    assert_eq!(journal.of_run(run)[0].param, hello);
    let (s, log) = run_log(&api, run).await;
    assert_eq!(s, 200, "{log}");
    assert!(
        log["content"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("the parameter is {hello}")),
        "{log}"
    );

    // The log of a running run, read while it runs; then the run is killed through the API.
    let marker = format!("still-running-{:08x}", rand::random::<u32>());
    let long = job(
        &api,
        json!({"glue_source": journal.script(&format!("echo {marker}\nsleep 60")), "retry_count": 1}),
    )
    .await;
    let long_run = trigger(&api, long, "").await;
    let log = eventually(30, "the running run's log to show its first line", || {
        let api = api.clone();
        let marker = marker.clone();
        async move {
            let (s, log) = run_log(&api, long_run).await;
            if s == 200 && log["content"].as_str().unwrap_or("").contains(&marker) {
                Ok(log)
            } else {
                Err(format!("{s} {log}"))
            }
        }
    })
    .await;
    assert_eq!(log["is_end"], false, "the run is still running: {log}");
    assert_eq!(status(&api.runs(long).await[0]), "running");
    let (s, v) = api.post(&format!("/v1/runs/{long_run}/kill"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["status"].as_str(), v["handle_code"].as_i64()),
        (Some("killed"), Some(500)),
        "{v}"
    );
    assert!(v["handle_msg"].as_str().unwrap_or("").contains("killed"), "{v}");
    // The executor's own report of the kill comes up the link; it starts no retry.
    let ended = eventually(30, "the killed run's log to end", || {
        let api = api.clone();
        async move {
            let (s, log) = run_log(&api, long_run).await;
            if s == 200 && log["is_end"] == true {
                Ok(log)
            } else {
                Err(format!("{s} {log}"))
            }
        }
    })
    .await;
    assert!(
        ended["content"]
            .as_str()
            .unwrap_or("")
            .contains("scheduling center kill job"),
        "the executor stopped the script because the admin said so: {ended}"
    );
    let runs = api.runs(long).await;
    assert_eq!(runs.len(), 1, "a killed run is not retried: {runs:#?}");
    assert_eq!(status(&runs[0]), "killed", "{}", runs[0]);

    // A sharding broadcast: one run per executor, shards 0 and 1 of 2.
    let sharded = job(
        &api,
        json!({"route_strategy": "SHARDING_BROADCAST", "glue_source": journal.script("echo shard $CHIME_SHARD_INDEX")}),
    )
    .await;
    trigger(&api, sharded, "").await;
    let runs = api.wait_runs(sharded, 30, "both shards", |r| finished(r) == 2).await;
    let mut shards = BTreeMap::new();
    for r in &runs {
        assert_eq!(status(r), "success", "{r}");
        assert_eq!(r["shard_total"], 2, "{r}");
        let ran = journal.of_run(r["id"].as_i64().unwrap());
        assert_eq!(ran.len(), 1, "{ran:?}");
        assert_eq!(ran[0].shard.1, 2, "{ran:?}");
        assert_eq!(Some(ran[0].shard.0), r["shard_index"].as_i64(), "{ran:?} {r}");
        shards.insert(ran[0].shard.0, ran[0].executor.clone());
    }
    assert_eq!(shards.keys().copied().collect::<Vec<_>>(), vec![0, 1], "{shards:?}");
    assert_eq!(
        shards.values().collect::<HashSet<_>>().len(),
        2,
        "each executor ran one shard: {shards:?}"
    );

    // A run past its timeout (2 s) is stopped by its executor and failed.
    let slow = job(
        &api,
        json!({"timeout_secs": 2, "glue_source": journal.script("sleep 30")}),
    )
    .await;
    let slow_run = trigger(&api, slow, "").await;
    let runs = api.wait_runs(slow, 30, "the timed-out run", |r| finished(r) == 1).await;
    assert_eq!(status(&runs[0]), "failed", "{}", runs[0]);
    assert!(
        runs[0]["handle_msg"]
            .as_str()
            .unwrap_or("")
            .contains("job execute timeout"),
        "{}",
        runs[0]
    );
    assert_eq!(journal.of_run(slow_run).len(), 1, "the run started before it timed out");

    drop(executors);
    drop(admin);
    db.drop_db().await;
}

/// How long the link is cut.
const CUT: Duration = Duration::from_secs(30);

/// Runs are failed or retried per the job's settings while the link is cut; this job has one
/// executor (`FIRST`) and no retries, so a run of the cut fails with a remoting error and is not
/// run at all (the executor never got it).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn link_cut() {
    let nat = Nat::create(1);
    let (admin, api, executors, db, dir) = start(&nat).await;
    let journal = Journal::new(dir.path().join("journal"));
    let cron = job(
        &api,
        json!({"schedule_type": "CRON", "schedule_expr": "* * * * * ?", "route_strategy": "FIRST",
               "retry_count": 0, "glue_source": journal.script("echo tick"), "running": true}),
    )
    .await;
    api.wait_runs(cron, 60, "3 successful runs before the cut", |r| {
        r.iter().filter(|r| succeeded(r)).count() >= 3
    })
    .await;

    let links_before = linked_lines(&admin, "e1").len();
    nat.cut(0);
    let cut_at = now_ms();
    tokio::time::sleep(CUT).await;
    nat.restore(0);
    let restored_at = now_ms();
    // The executor dials again with a backoff (at most 30 s between tries): the first run that
    // succeeds after the cut marks the link's return.
    let runs = api
        .wait_runs(cron, 90, "a successful run after the link came back", |r| {
            r.iter()
                .any(|r| succeeded(r) && r["scheduled_at"].as_i64().unwrap() > restored_at)
        })
        .await;
    let back_at = runs
        .iter()
        .filter(|r| succeeded(r) && r["scheduled_at"].as_i64().unwrap() > restored_at)
        .map(|r| r["scheduled_at"].as_i64().unwrap())
        .min()
        .unwrap();
    assert!(
        linked_lines(&admin, "e1").len() > links_before,
        "the executor linked again after the cut:\n{}",
        admin.output()
    );
    // A few more seconds on the new link, then the job stops and every run ends.
    let after = back_at + 5000;
    api.wait_runs(cron, 60, "5 s of runs on the new link", |r| {
        r.iter()
            .any(|r| succeeded(r) && r["scheduled_at"].as_i64().unwrap() >= after)
    })
    .await;
    let (s, _) = api.post(&format!("/v1/jobs/{cron}/stop"), json!({})).await;
    assert_eq!(s, 200);
    let runs = api
        .wait_runs(cron, 60, "every run ended", |r| {
            r.iter()
                .all(|r| matches!(status(r), "success" | "failed") && r["trigger_code"] != 0)
        })
        .await;
    // What the runs of the cut became, and why, for the test's output.
    let mut outcomes: BTreeMap<(String, String), usize> = BTreeMap::new();
    for r in runs.iter().filter(|r| {
        let at = r["scheduled_at"].as_i64().unwrap();
        at > cut_at && at < back_at
    }) {
        let msg = r["trigger_msg"].as_str().unwrap_or("");
        let why = msg
            .find("remoting error(")
            .map(|i| msg[i..].split(')').next().unwrap_or("").to_owned())
            .unwrap_or_default();
        *outcomes.entry((status(r).to_owned(), why)).or_default() += 1;
    }
    eprintln!(
        "cut at {cut_at}, restored {} ms later, first success on the new link {} ms after that; \
         runs in between: {outcomes:?}",
        restored_at - cut_at,
        back_at - restored_at
    );

    // The claim side: one run row for every second, across the cut.
    common::assert_every_second_ran_once(
        cron,
        runs.iter().map(|r| r["scheduled_at"].as_i64().unwrap()),
        cut_at,
        back_at,
    );
    // The executor side: no run executed twice, none that the admin recorded as failed.
    let mut executed: HashMap<i64, usize> = HashMap::new();
    for e in journal.entries() {
        *executed.entry(e.run).or_default() += 1;
    }
    let twice: Vec<_> = executed.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "runs executed more than once: {twice:?}");
    let mut problems = Vec::new();
    for r in &runs {
        let id = r["id"].as_i64().unwrap();
        let at = r["scheduled_at"].as_i64().unwrap();
        let ran = executed.contains_key(&id);
        let msg = r["trigger_msg"].as_str().unwrap_or("");
        if status(r) == "failed" && ran {
            problems.push(format!("run {id} (second {at}) is failed but the executor ran it: {r}"));
        }
        if status(r) == "success" && !ran {
            problems.push(format!(
                "run {id} (second {at}) is a success the executor never ran: {r}"
            ));
        }
        if at < cut_at - 1000 || at >= back_at {
            // Before the cut and on the new link: every run succeeds.
            if status(r) != "success" {
                problems.push(format!("run {id} (second {at}) outside the cut did not succeed: {r}"));
            }
        } else if at > cut_at + 1000 && at < restored_at {
            // During the cut: nothing reaches the executor; the trigger fails, no retry.
            if status(r) != "failed" || !msg.contains("remoting error") {
                problems.push(format!(
                    "run {id} (second {at}) of the cut is not a remoting failure: {r}"
                ));
            }
            if r["retried_by"].is_number() {
                problems.push(format!("run {id} (second {at}) was retried without retries: {r}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems (cut {cut_at}..{restored_at}, back at {back_at}), the first 20:\n{}",
        problems.len(),
        problems.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );

    drop(executors);
    drop(admin);
    db.drop_db().await;
}

/// How long each cut of `cuts_of_both_kinds` lasts: past the admin's own detection of a dead
/// link (a call unanswered for `--executor-timeout`, then 5 s without an answer to its ping).
const SHORT_CUT: Duration = Duration::from_secs(15);

/// How the line of `cuts_of_both_kinds` is cut.
#[derive(Debug, Clone, Copy)]
enum Cut {
    /// The router's port to the executor goes down: both ends' kernels see nothing, but the
    /// router answers nothing either; when it comes back, so does the route.
    PortDown,
    /// Every packet is dropped at the router without a word, the line and the NAT mapping kept.
    Silent,
}

/// Triggers `job` every 100 ms from `from` on until one of those runs succeeds (at most 60 s);
/// returns how long after `from` the first run that succeeded was triggered, and the runs.
async fn first_success_after(api: &Api, job: i64, from: i64) -> i64 {
    let mut triggered: Vec<(i64, i64)> = Vec::new();
    let deadline = from + 60_000;
    loop {
        let at = now_ms();
        assert!(at < deadline, "no run succeeded within 60 s of the line's return");
        triggered.push((trigger(api, job, "probe").await, at));
        let runs = api.runs(job).await;
        let succeeded_at = runs
            .iter()
            .filter(|r| succeeded(r))
            .filter_map(|r| {
                let id = r["id"].as_i64().unwrap();
                triggered.iter().find(|(run, _)| *run == id).map(|(_, at)| *at)
            })
            .min();
        if let Some(at) = succeeded_at {
            return at - from;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A linked executor's line is cut for [`SHORT_CUT`] while a job fires every second, twice in
/// each way ([`Cut`]); each time the executor notices by itself, during the cut, that its link
/// is dead (the admin has been silent, and its ping goes unanswered) and dials again; after
/// each cut runs succeed again, no run is executed twice, and every run the admin records as a
/// success was executed. How soon after the line's return the runs succeed again is printed
/// (docs/BENCHMARKS.md, "Executor links").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cuts_of_both_kinds() {
    let nat = Nat::create(1);
    let (admin, api, executors, db, dir) = start(&nat).await;
    let journal = Journal::new(dir.path().join("journal"));
    let cron = job(
        &api,
        json!({"schedule_type": "CRON", "schedule_expr": "* * * * * ?", "route_strategy": "FIRST",
               "retry_count": 0, "glue_source": journal.script("echo tick"), "running": true}),
    )
    .await;
    let manual = job(
        &api,
        json!({"route_strategy": "FIRST", "retry_count": 0, "glue_source": journal.script("echo probe")}),
    )
    .await;
    api.wait_runs(cron, 60, "3 successful runs before the cuts", |r| {
        r.iter().filter(|r| succeeded(r)).count() >= 3
    })
    .await;

    let mut resumed = Vec::new();
    for cut in [Cut::PortDown, Cut::Silent, Cut::PortDown, Cut::Silent] {
        match cut {
            Cut::PortDown => nat.cut(0),
            Cut::Silent => nat.drop_silently(0),
        }
        tokio::time::sleep(SHORT_CUT).await;
        match cut {
            Cut::PortDown => nat.restore(0),
            Cut::Silent => nat.pass(0),
        }
        let back = now_ms();
        let after = first_success_after(&api, manual, back).await;
        eprintln!("{cut:?} for {SHORT_CUT:?}: runs succeed again {after} ms after the line's return");
        resumed.push((cut, after));
        // The cron job too, before the next cut.
        let since = now_ms();
        api.wait_runs(cron, 60, "a successful cron run after the cut", |r| {
            r.iter()
                .any(|r| succeeded(r) && r["scheduled_at"].as_i64().unwrap() > since)
        })
        .await;
    }
    eprintln!("resumed after: {resumed:?}");
    // Each time the executor found out by itself, during the cut, that its link was dead (its
    // ping went unanswered), rather than when the line returned and the admin reset the old
    // connection: so it was dialing again when the line came back.
    let noticed = executors[0]
        .output()
        .lines()
        .filter(|l| l.contains("link closed; dialing again") && l.contains("nothing came back within"))
        .count();
    assert!(
        noticed >= resumed.len(),
        "the executor noticed {noticed} of {} cuts itself:\n{}",
        resumed.len(),
        executors[0].output()
    );

    let (s, _) = api.post(&format!("/v1/jobs/{cron}/stop"), json!({})).await;
    assert_eq!(s, 200);
    let mut runs = Vec::new();
    for id in [cron, manual] {
        runs.extend(
            api.wait_runs(id, 60, "every run ended", |r| {
                r.iter()
                    .all(|r| matches!(status(r), "success" | "failed") && r["trigger_code"] != 0)
            })
            .await,
        );
    }
    let mut executed: HashMap<i64, usize> = HashMap::new();
    for e in journal.entries() {
        *executed.entry(e.run).or_default() += 1;
    }
    let twice: Vec<_> = executed.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "runs executed more than once: {twice:?}");
    let unexecuted: Vec<_> = runs
        .iter()
        .filter(|r| status(r) == "success" && !executed.contains_key(&r["id"].as_i64().unwrap()))
        .collect();
    assert!(
        unexecuted.is_empty(),
        "successes the executor never ran: {unexecuted:?}"
    );
    let lost: Vec<_> = executed
        .keys()
        .filter(|id| !runs.iter().any(|r| r["id"].as_i64() == Some(**id)))
        .collect();
    assert!(lost.is_empty(), "runs executed that the admin does not know: {lost:?}");

    drop(executors);
    drop(admin);
    db.drop_db().await;
}
