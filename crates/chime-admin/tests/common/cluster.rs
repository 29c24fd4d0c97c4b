//! Several real `chime admin` processes sharing one PostgreSQL or MariaDB database, the in-test
//! executor, and [`JOBS`] jobs firing every second: what the multi-admin and database-restart
//! tests disturb (SIGKILL, SIGSTOP, a rolling restart, a network cut, a database restart) and
//! then check, second by second, at the database and at the executor.
//!
//! Every admin runs with the defaults that matter here: 2 s partition leases and the 5 s misfire
//! threshold, with jobs on the default misfire policy (`DO_NOTHING`). One admin can run in a
//! network namespace of its own ([`Netns`]), reaching the database through a forwarder on the
//! host side of a veth pair, so the test can cut its link.

use super::executor::{Delivery, TestExecutor};
use super::process::{free_port, OwnedProcess};
use super::{Api, Db, TestDb, ACCESS_TOKEN, API_TOKEN};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Admins sharing the database.
pub const ADMINS: usize = 3;
/// Jobs firing every second, about six per partition.
pub const JOBS: usize = 100;
/// The admins' misfire threshold (the default), in ms: a fire found later than this is handled
/// by its job's misfire policy instead of being sent.
pub const MISFIRE_THRESHOLD_MS: i64 = 5000;
/// Partitions of the jobs, spread over the admins by leases.
pub const PARTITIONS: u64 = 16;
/// Longest any single wait of these tests lasts.
const WAIT: Duration = Duration::from_secs(60);
/// Group of the jobs, and the executor's app name.
const APP: &str = "multi";

/// The node id of admin `k`: `admin-a`, `admin-b`, …
pub fn node_name(k: usize) -> String {
    format!("admin-{}", (b'a' + k as u8) as char)
}

/// The current wall-clock time, epoch ms (the clock run rows are stamped with).
pub fn now_ms() -> i64 {
    chime_admin::model::now_ms()
}

/// One `chime admin` process, killed with the test whatever way it ends.
pub struct Admin {
    process: OwnedProcess,
    /// Its `--node-id`.
    pub node: String,
    /// Where the test reaches its HTTP server: loopback, or the namespace side of a veth pair.
    pub ip: IpAddr,
    /// Its HTTP port (kept across restarts: the executor and the test know it).
    pub port: u16,
    /// The network namespace it runs in, if any.
    netns: Option<String>,
    /// Its `--db`, as seen from where it runs.
    db_url: String,
    /// Its stdout and stderr, appended across restarts.
    log: PathBuf,
}

impl Admin {
    /// Starts `chime admin` as `node` on `db_url`, listening on `ip:port` (in network namespace
    /// `netns` if given), its output appended to `log`.
    pub fn start(bin: &Path, db_url: &str, node: &str, at: (IpAddr, u16), netns: Option<&str>, log: &Path) -> Admin {
        Self::start_with(bin, db_url, node, at, netns, log, &[])
    }

    /// [`Admin::start`] with more command-line flags (`--dead-timeout 35s`, …).
    pub fn start_with(
        bin: &Path,
        db_url: &str,
        node: &str,
        (ip, port): (IpAddr, u16),
        netns: Option<&str>,
        log: &Path,
        flags: &[&str],
    ) -> Admin {
        let mut command = match netns {
            Some(ns) => {
                // `ip netns exec` enters the namespace and execs the admin: the child's pid is
                // the admin's, for signals, and its parent-death signal survives the exec.
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        // In a namespace every address is the admin's own; the test reaches it on the veth.
        let listen = match netns {
            Some(_) => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port),
            None => SocketAddr::new(ip, port),
        };
        command
            .args(["admin", "--db", db_url, "--listen", &listen.to_string()])
            .args(["--context-path", "/xxl-job-admin", "--node-id", node])
            .args(["--tick", "200ms", "--lookahead", "2s"])
            .args(["--registry-refresh", "500ms", "--default-tz", "UTC"])
            .args(flags)
            .env("CHIME_API_TOKEN", API_TOKEN)
            .env("CHIME_ACCESS_TOKEN", ACCESS_TOKEN)
            .env("CHIME_ADMIN_PASSWORD", "multi-admin-test")
            .env("RUST_LOG", "info,sqlx=warn");
        let process = OwnedProcess::spawn(&format!("chime admin {node}"), &mut command, Some(log));
        Admin {
            process,
            node: node.to_owned(),
            ip,
            port,
            netns: netns.map(str::to_owned),
            db_url: db_url.to_owned(),
            log: log.to_path_buf(),
        }
    }

    /// Its REST API.
    pub fn api(&self) -> Api {
        Api::new(SocketAddr::new(self.ip, self.port))
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) with the pid of a child this test started and has not reaped.
        let rc = unsafe { libc::kill(self.process.id() as libc::pid_t, signal) };
        assert_eq!(
            rc,
            0,
            "signal {signal} to {}: {}",
            self.node,
            std::io::Error::last_os_error()
        );
    }

    /// Panics (with the end of its output) if the process has exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.process.exited() {
            panic!(
                "{} exited ({status}); its last output:\n{}",
                self.node,
                self.process.output_tail(6000)
            );
        }
    }

    /// `/healthz`: the partitions it holds, or `None` if it does not answer within a second or
    /// reports its database unavailable.
    pub async fn partitions(&self, http: &reqwest::Client) -> Option<u64> {
        let url = format!("http://{}/healthz", SocketAddr::new(self.ip, self.port));
        let reply = http.get(url).send().await.ok()?;
        if reply.status() != 200 {
            return None;
        }
        reply.json::<Value>().await.ok()?["partitions"].as_u64()
    }
}

/// Every admin holds some partitions, and together all 16.
pub fn shared_by_all(shares: &[u64]) -> bool {
    shares.iter().all(|n| (1..PARTITIONS).contains(n)) && shares.iter().sum::<u64>() == PARTITIONS
}

/// What [`Cluster::finish`] checks, besides every second having one run row.
pub struct Check {
    /// Names the scenario in the printed summary.
    pub scenario: &'static str,
    /// Start of the disturbance, epoch ms: every job must have runs from more than 2 s before.
    pub from: i64,
    /// End of the disturbance, epoch ms: every job must have runs until more than 1 s after.
    pub to: i64,
    /// Seconds in this range (epoch ms, inclusive) may have been skipped as misfires — recorded,
    /// never sent — as `DO_NOTHING` does after an outage longer than the misfire threshold.
    /// `None`: every second must have run.
    pub may_skip: Option<(i64, i64)>,
    /// No run for a second in `(from, to)` (epoch ms) may arrive from this address: an admin
    /// that could not renew its leases must not send what it had claimed.
    pub silent: Option<(IpAddr, i64, i64)>,
}

/// What [`Cluster::finish`] found.
#[derive(Debug)]
pub struct Outcome {
    /// Run rows not skipped as misfires.
    pub runs: usize,
    /// Longest `triggered_at - scheduled_at` of those, ms.
    pub longest_delay: i64,
    /// The run sent latest after its second: its job, second and sender.
    pub latest: String,
    /// (job, second) pairs the executor received more than once.
    pub received_twice: usize,
    /// (job, second) pairs of the window the executor never received, skipped ones aside.
    pub not_received: usize,
    /// Seconds recorded as skipped misfires.
    pub skipped: usize,
    /// Skipped seconds the executor nevertheless received (sent just before the outage, and
    /// recorded as skipped after it).
    pub skipped_but_received: usize,
    /// Runs still pending or running a minute after the jobs were stopped.
    pub left_open: usize,
}

/// Admins sharing the partitions of one database, an executor registered with the last of them,
/// and [`JOBS`] jobs firing every second, sent by every admin.
pub struct Cluster {
    /// The database the admins share.
    pub kind: Db,
    /// In start order; admin `k` is [`node_name`]`(k)`. Admin 0 is the one in the namespace,
    /// if there is one; the last is the one the executor and the test talk to.
    pub admins: Vec<Admin>,
    /// The REST API of the last admin, which every scenario keeps running.
    pub api: Api,
    /// The one executor, which records every run it receives and from where.
    pub ex: TestExecutor,
    /// The jobs.
    pub ids: Vec<i64>,
    bin: PathBuf,
    db: Option<TestDb>,
    dir: Option<tempfile::TempDir>,
    /// `/healthz` client: a frozen or cut-off admin does not hold a wait up.
    http: reqwest::Client,
    /// Dropped after the admins (fields drop in declaration order): the namespace's admin is
    /// gone before its namespace and database link are.
    forwarder: Option<Forwarder>,
    netns: Option<Netns>,
}

impl Cluster {
    /// Three admins on the host.
    pub async fn start(kind: Db) -> Cluster {
        Cluster::start_in(TestDb::new(kind).await, None).await
    }

    /// Three admins on `db`, a database prepared beforehand (an earlier release's schema, say).
    pub async fn start_on(db: TestDb) -> Cluster {
        Cluster::start_in(db, None).await
    }

    /// Three admins, the first inside `netns`, reaching the database through a forwarder on the
    /// host side of its veth pair.
    pub async fn start_with_netns(kind: Db, netns: Netns) -> Cluster {
        Cluster::start_in(TestDb::new(kind).await, Some(netns)).await
    }

    async fn start_in(db: TestDb, netns: Option<Netns>) -> Cluster {
        let kind = db.kind;
        let bin = super::chime_binary();
        let dir = tempfile::tempdir().unwrap();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(1))
            .no_proxy()
            .build()
            .unwrap();
        let mut forwarder = None;
        let mut admins = Vec::new();
        for k in 0..ADMINS {
            let node = node_name(k);
            let log = dir.path().join(format!("{node}.log"));
            let admin = match (&netns, k) {
                (Some(ns), 0) => {
                    let mut url = reqwest::Url::parse(&db.url).expect("database URL");
                    let default_port = if kind == Db::Postgres { 5432 } else { 3306 };
                    let target = format!(
                        "{}:{}",
                        url.host_str().expect("database host"),
                        url.port().unwrap_or(default_port)
                    );
                    let fwd = Forwarder::start(SocketAddr::new(ns.host_ip.into(), 0), target).await;
                    url.set_host(Some(&ns.host_ip.to_string())).unwrap();
                    url.set_port(Some(fwd.addr.port())).unwrap();
                    forwarder = Some(fwd);
                    let at = (IpAddr::V4(ns.ns_ip), free_port());
                    Admin::start(&bin, url.as_str(), &node, at, Some(&ns.name), &log)
                }
                _ => {
                    let at = (IpAddr::V4(Ipv4Addr::LOCALHOST), free_port());
                    Admin::start(&bin, &db.url, &node, at, None, &log)
                }
            };
            admins.push(admin);
            let what = format!("{node} to hold partitions after starting");
            // The first takes everything; each later one gets partitions the others give back
            // beyond their fair share.
            let first = k == 0;
            wait_for_shares(&http, &mut admins, &[k], &what, |s| {
                if first {
                    s[0] == PARTITIONS
                } else {
                    s[0] >= 1
                }
            })
            .await;
        }
        let last = &admins[ADMINS - 1];
        let base = format!("http://127.0.0.1:{}/xxl-job-admin", last.port);
        // The executor listens where every admin reaches it: in the namespace case on all
        // addresses, registered with the host side of the veth, which the host's admins reach
        // as a local address and the namespace's admin through the link.
        let ex = match &netns {
            Some(ns) => {
                let any = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0);
                TestExecutor::start_at(&base, APP, ACCESS_TOKEN, any, ns.host_ip.into()).await
            }
            None => TestExecutor::start(&base, APP, ACCESS_TOKEN).await,
        };
        let api = last.api();
        admins[0].api().ok("/v1/groups", json!({"app_name": APP})).await;
        // Every admin reads the registry from the database.
        for admin in &admins {
            admin.api().wait_executors(APP, 1).await;
        }
        let mut ids = Vec::new();
        for _ in 0..JOBS {
            let v = api
                .ok(
                    "/v1/jobs",
                    json!({"group": APP, "handler": "ok", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "running": true}),
                )
                .await;
            ids.push(v["id"].as_i64().unwrap());
        }
        let mut cluster = Cluster {
            kind,
            admins,
            api,
            ex,
            ids,
            bin,
            db: Some(db),
            dir: Some(dir),
            http,
            forwarder,
            netns,
        };
        // The other admins' claim loops learn of the new jobs from the database.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let all: Vec<usize> = (0..ADMINS).collect();
        cluster
            .wait_shares(&all, "the admins to share the partitions", shared_by_all)
            .await;
        cluster
            .wait_every_admin_sends(&all, now_ms() - 3000, "at the start")
            .await;
        cluster
    }

    /// A file in the directory of the admins' logs (kept when the test fails).
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.dir.as_ref().expect("the cluster is running").path().join(name)
    }

    /// The namespace admin 0 runs in.
    pub fn netns(&self) -> &Netns {
        self.netns
            .as_ref()
            .expect("the cluster was started with a network namespace")
    }

    /// Kills admin `k` with SIGKILL.
    pub fn kill(&mut self, k: usize) {
        self.admins[k].process.kill_9();
    }

    /// Stops admin `k` as a service manager does (SIGTERM), waits for it to exit cleanly, and
    /// starts it again with the same node id, address and database.
    pub async fn restart(&mut self, k: usize) {
        self.admins[k].signal(libc::SIGTERM);
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = self.admins[k].process.exited() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit within 60 s of SIGTERM",
                self.admins[k].node
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(status.success(), "{} stopped cleanly: {status:?}", self.admins[k].node);
        let old = &self.admins[k];
        let new = Admin::start(
            &self.bin,
            &old.db_url,
            &old.node,
            (old.ip, old.port),
            old.netns.as_deref(),
            &old.log,
        );
        // Replacing reaps the old process (already exited) and keeps the new one.
        self.admins[k] = new;
    }

    /// The partitions each of `which` reports on `/healthz`, 0 for one that does not answer.
    pub async fn shares(&self, which: &[usize]) -> Vec<u64> {
        let mut shares = Vec::new();
        for k in which {
            shares.push(self.admins[*k].partitions(&self.http).await.unwrap_or(0));
        }
        shares
    }

    /// Waits (at most 60 s) until the partitions admins `which` report satisfy `pred`, and
    /// returns them. A partition moving between two admins is counted by neither or, for a
    /// moment, by both, so a sum of 16 means every partition is held. Fails at once if one of
    /// them exited.
    pub async fn wait_shares(&mut self, which: &[usize], what: &str, pred: impl Fn(&[u64]) -> bool) -> Vec<u64> {
        wait_for_shares(&self.http, &mut self.admins, which, what, pred).await
    }

    /// Waits (at most 60 s) until each of admins `which` has sent a run scheduled after `after`
    /// (epoch ms), as the trigger reports say (they name the sending admin).
    pub async fn wait_every_admin_sends(&self, which: &[usize], after: i64, when: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let (_, recent) = self.api.get("/v1/runs?status=success&limit=600").await;
            let recent: Vec<Value> = recent
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| r["scheduled_at"].as_i64().unwrap_or(0) > after)
                .take(150)
                .cloned()
                .collect();
            let senders = self.senders(&recent).await;
            let silent: Vec<&str> = which
                .iter()
                .map(|k| self.admins[*k].node.as_str())
                .filter(|node| !senders.contains_key(*node))
                .collect();
            if silent.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{silent:?} sent no run {when} (runs per sender among {} recent: {senders:?})",
                recent.len()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// How many of `runs` each admin sent (the trigger report names the sending admin).
    async fn senders(&self, runs: &[Value]) -> BTreeMap<String, usize> {
        let mut senders = BTreeMap::new();
        for r in runs {
            let id = r["id"].as_i64().unwrap();
            let (_, full) = self.api.get(&format!("/v1/runs/{id}")).await;
            let msg = full["trigger_msg"].as_str().unwrap_or("");
            if let Some(admin) = self.admins.iter().find(|a| msg.contains(&a.node)) {
                *senders.entry(admin.node.clone()).or_default() += 1;
            }
        }
        senders
    }

    /// Lets the jobs fire a few seconds more, stops them through the last admin, waits until no
    /// run is open, and checks every job at the database and at the executor:
    ///
    /// - each second from before the disturbance to after it has exactly one run row;
    /// - that run was sent as scheduled (a CRON run, at most late) and succeeded — or, inside
    ///   `check.may_skip`, was skipped as a misfire;
    /// - the executor received each second that was sent exactly once (keyed by job and
    ///   scheduled second, the run of each received log id looked up through the REST API),
    ///   and nothing from `check.silent` for a second of its window.
    ///
    /// Prints the counts before asserting, so a failing run still shows them.
    pub async fn finish(mut self, check: Check) -> Outcome {
        let kind = self.kind;
        tokio::time::sleep(Duration::from_secs(4)).await;
        // Every job ran past the disturbance before it is stopped. Under load a partition
        // handed back to a returning admin may fire its backlog seconds later than the sleep
        // above; stopping the job first would cut that backlog off and look like a gap.
        let past = check.to + 2000;
        let deadline = Instant::now() + WAIT;
        for id in &self.ids {
            loop {
                let runs = self.api.runs(*id).await;
                let newest = runs.iter().filter_map(|r| r["scheduled_at"].as_i64()).max();
                if newest.is_some_and(|at| at > past) {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{kind:?} {}: job {id} ran nothing scheduled after {past} (newest: {newest:?})",
                    check.scenario
                );
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
        for id in &self.ids {
            let (status, body) = self.api.post(&format!("/v1/jobs/{id}/stop"), json!({})).await;
            assert_eq!(status, 200, "stopping job {id}: {body}");
        }
        let mut problems = Vec::new();
        // Runs neither sent nor resolved a minute after the jobs stopped are counted as such
        // (and reported with the rest), not waited for.
        let deadline = Instant::now() + WAIT;
        let left_open = loop {
            let mut open = Vec::new();
            for status in ["pending", "running"] {
                let (_, runs) = self.api.get(&format!("/v1/runs?status={status}&limit=10000")).await;
                open.extend(runs.as_array().cloned().unwrap_or_default());
            }
            if open.is_empty() || Instant::now() >= deadline {
                break open;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        if !left_open.is_empty() {
            let some: Vec<String> = left_open.iter().take(5).map(Value::to_string).collect();
            problems.push(format!(
                "{} runs still open 60 s after the jobs were stopped, e.g.:\n{}",
                left_open.len(),
                some.join("\n")
            ));
        }
        let mut rows: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
        // Run id -> (job, scheduled second): what each delivery was for.
        let mut second_of: HashMap<i64, (i64, i64)> = HashMap::new();
        for id in &self.ids {
            let runs = self.api.runs(*id).await;
            for r in &runs {
                let at = r["scheduled_at"].as_i64().unwrap();
                second_of.insert(r["id"].as_i64().unwrap(), (*id, at));
            }
            rows.insert(*id, runs);
        }
        let deliveries = self.ex.deliveries();
        let mut received: HashMap<(i64, i64), usize> = HashMap::new();
        for d in &deliveries {
            match second_of.get(&d.log_id) {
                Some(key) => *received.entry(*key).or_default() += 1,
                None => problems.push(format!("the executor received run {}, which has no row", d.log_id)),
            }
        }
        let stale = stale_sends(&deliveries, &second_of, check.silent);
        if !stale.is_empty() {
            problems.push(format!(
                "{} runs of seconds in the cut-off admin's silent window came from it: {:?}",
                stale.len(),
                &stale[..stale.len().min(10)]
            ));
        }
        let may_skip = |at: i64| check.may_skip.is_some_and(|(from, to)| (from..=to).contains(&at));
        let mut outcome = Outcome {
            runs: 0,
            longest_delay: 0,
            latest: String::new(),
            received_twice: 0,
            not_received: 0,
            skipped: 0,
            skipped_but_received: 0,
            left_open: left_open.len(),
        };
        for (job, runs) in &rows {
            let by_second: BTreeMap<i64, &Value> =
                runs.iter().map(|r| (r["scheduled_at"].as_i64().unwrap(), r)).collect();
            let (Some(first), Some(last)) = (by_second.keys().next(), by_second.keys().next_back()) else {
                problems.push(format!("job {job} has no runs"));
                continue;
            };
            for second in (*first..=*last).step_by(1000) {
                let times = received.get(&(*job, second)).copied().unwrap_or(0);
                let Some(r) = by_second.get(&second) else {
                    // No row: reported by the row check below; not received unless sent.
                    outcome.not_received += usize::from(times == 0);
                    continue;
                };
                if r["status"] == "skipped" {
                    outcome.skipped += 1;
                    outcome.skipped_but_received += usize::from(times > 0);
                    outcome.received_twice += usize::from(times > 1);
                    if !may_skip(second) {
                        problems.push(format!("job {job}: second {second} skipped outside the outage: {r}"));
                    }
                    continue;
                }
                outcome.runs += 1;
                let (triggered, scheduled) = (r["triggered_at"].as_i64().unwrap(), r["scheduled_at"].as_i64().unwrap());
                if triggered > 0 && triggered - scheduled > outcome.longest_delay {
                    outcome.longest_delay = triggered - scheduled;
                    // Which second, relative to the disturbance, and which admin sent it.
                    let admin = r["trigger_msg"]
                        .as_str()
                        .and_then(|m| m.split("Admin：").nth(1))
                        .and_then(|m| m.split("<br>").next())
                        .unwrap_or("?")
                        .to_owned();
                    outcome.latest = format!(
                        "job {job}, second {:+} ms from the disturbance, sent by {admin}",
                        scheduled - check.from
                    );
                }
                // Not skipped as a misfire, so it was sent as scheduled, at most late.
                if r["trigger_type"] != "CRON" || r["status"] != "success" {
                    problems.push(format!("job {job}: second {second} did not run as scheduled: {r}"));
                }
                match times {
                    1 => {}
                    0 => {
                        outcome.not_received += 1;
                        problems.push(format!("job {job}: second {second} never reached the executor: {r}"));
                    }
                    n => {
                        outcome.received_twice += 1;
                        problems.push(format!("job {job}: second {second} received {n} times: {r}"));
                    }
                }
            }
        }
        eprintln!(
            "{kind:?} {}: {} runs of {JOBS} jobs, longest delay {} ms ({}), (job, second) received twice: {}, not received: {}, skipped: {} (of which received: {}), left open: {}, stale sends from the cut-off admin: {}",
            check.scenario,
            outcome.runs,
            outcome.longest_delay,
            outcome.latest,
            outcome.received_twice,
            outcome.not_received,
            outcome.skipped,
            outcome.skipped_but_received,
            outcome.left_open,
            stale.len(),
        );
        // The database rows: one per second of every job across the disturbance.
        for (job, runs) in &rows {
            super::assert_every_second_ran_once(
                *job,
                runs.iter().map(|r| r["scheduled_at"].as_i64().unwrap()),
                check.from,
                check.to,
            );
        }
        assert!(
            problems.is_empty(),
            "{kind:?} {}: {} problems (disturbance {}..{}), the first 20:\n{}",
            check.scenario,
            problems.len(),
            check.from,
            check.to,
            problems.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
        self.ex.kill();
        self.admins.clear();
        if let Some(db) = self.db.take() {
            db.drop_db().await;
        }
        outcome
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // A failing scenario keeps the admins' logs (their tails are printed as they die).
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                eprintln!("admin logs kept in {}", dir.keep().display());
            }
        }
    }
}

/// Runs for seconds in the silent window of `silent` that arrived from its address.
fn stale_sends(
    deliveries: &[Delivery],
    second_of: &HashMap<i64, (i64, i64)>,
    silent: Option<(IpAddr, i64, i64)>,
) -> Vec<(i64, i64, i64)> {
    let Some((from, start, end)) = silent else {
        return Vec::new();
    };
    deliveries
        .iter()
        .filter(|d| d.from == from)
        .filter_map(|d| second_of.get(&d.log_id).map(|(job, at)| (*job, *at, d.at)))
        .filter(|(_, at, _)| *at > start && *at < end)
        .collect()
}

/// [`Cluster::wait_shares`] on the admins alone, for before the cluster is complete.
async fn wait_for_shares(
    http: &reqwest::Client,
    admins: &mut [Admin],
    which: &[usize],
    what: &str,
    pred: impl Fn(&[u64]) -> bool,
) -> Vec<u64> {
    let deadline = Instant::now() + WAIT;
    loop {
        let mut shares = Vec::new();
        for k in which {
            admins[*k].assert_running();
            shares.push(admins[*k].partitions(http).await.unwrap_or(0));
        }
        if pred(&shares) {
            return shares;
        }
        assert!(
            Instant::now() < deadline,
            "timed out (60 s) waiting for {what}: {shares:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Name prefix of the test namespaces (`scripts/test` removes leftovers by it).
pub const NETNS_PREFIX: &str = "chime-cut-";

/// A network namespace joined to the host by a veth pair on a private /30, its `lo` up.
/// Removed when dropped, also when the test fails. Needs root (CAP_NET_ADMIN).
pub struct Netns {
    /// `chime-cut-{pid}-{pg|my}`: unique per test process and database.
    pub name: String,
    host_if: String,
    ns_if: String,
    /// The host side's address.
    pub host_ip: Ipv4Addr,
    /// The namespace side's address.
    pub ns_ip: Ipv4Addr,
}

impl Netns {
    /// Creates the namespace for the test on database `kind`, with a /30 derived from the
    /// database and this process's id, so two test processes never share a name or a network.
    pub fn create(kind: Db) -> Netns {
        let pid = std::process::id();
        let (tag, t, second_octet) = match kind {
            Db::Postgres => ("pg", 'p', 201),
            _ => ("my", 'm', 202),
        };
        let base = Ipv4Addr::new(10, second_octet, ((pid >> 6) & 0xff) as u8, ((pid & 0x3f) << 2) as u8);
        let host_ip = Ipv4Addr::from(u32::from(base) + 1);
        let ns = Netns {
            name: format!("{NETNS_PREFIX}{pid}-{tag}"),
            // Interface names have at most 15 bytes: `chcut` + pid in hex (≤ 6) + tag + side.
            host_if: format!("chcut{pid:x}{t}h"),
            ns_if: format!("chcut{pid:x}{t}n"),
            host_ip,
            ns_ip: Ipv4Addr::from(u32::from(base) + 2),
        };
        // Left over by an earlier test process with this pid that was killed outright.
        ns.remove();
        ip(&["netns", "add", &ns.name]);
        ip(&["link", "add", &ns.host_if, "type", "veth", "peer", "name", &ns.ns_if]);
        ip(&["link", "set", &ns.ns_if, "netns", &ns.name]);
        ip(&["addr", "add", &format!("{host_ip}/30"), "dev", &ns.host_if]);
        ip(&["link", "set", &ns.host_if, "up"]);
        ip(&[
            "-n",
            &ns.name,
            "addr",
            "add",
            &format!("{}/30", ns.ns_ip),
            "dev",
            &ns.ns_if,
        ]);
        ip(&["-n", &ns.name, "link", "set", &ns.ns_if, "up"]);
        ip(&["-n", &ns.name, "link", "set", "lo", "up"]);
        ns
    }

    /// Takes the namespace side of the link down: nothing passes between the namespace and the
    /// host until [`Netns::restore`].
    pub fn cut(&self) {
        ip(&["-n", &self.name, "link", "set", &self.ns_if, "down"]);
    }

    /// Brings the link up again (its address and route come back with it).
    pub fn restore(&self) {
        ip(&["-n", &self.name, "link", "set", &self.ns_if, "up"]);
    }

    /// Deletes the namespace (which deletes the veth pair) and the host side, should it have
    /// stayed behind; quietly, whatever of it exists.
    fn remove(&self) {
        for args in [["netns", "delete", &self.name], ["link", "delete", &self.host_if]] {
            let _ = Command::new("ip")
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Runs `ip ARGS`, which must succeed.
fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ip (iproute2) runs");
    assert!(
        out.status.success(),
        "ip {} failed ({}): {} (these tests need root and iproute2)",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// A TCP forwarder in the test process: every connection accepted on `addr` is joined to a new
/// connection to the target. The databases listen on loopback only and trust it; an admin in a
/// namespace reaches them through this, on the host side of its veth pair. Stops when dropped.
pub struct Forwarder {
    /// Where it accepts.
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Forwarder {
    /// Listens on `listen` (port 0: any) and forwards to `target` (`host:port`).
    pub async fn start(listen: SocketAddr, target: String) -> Forwarder {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .unwrap_or_else(|e| panic!("forwarder cannot listen on {listen}: {e}"));
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            // Owned by this task: aborting it drops them and so closes every forwarded connection.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((mut inbound, _)) = accepted else { continue };
                        let target = target.clone();
                        connections.spawn(async move {
                            if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            }
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Forwarder { addr, task }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}
