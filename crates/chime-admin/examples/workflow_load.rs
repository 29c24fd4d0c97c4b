//! Load tool for workflows (docs/BENCHMARKS.md, "Workflows").
//!
//! Starts the admin in-process on a fresh SQLite file (or `--db URL`, an empty database) and
//! the minimal executor of `admin_load` in a child process (`admin_load --executor-child`, built
//! beside this tool). Defines `--instances N` workflows of ten nodes in five levels (1 → 3 →
//! join → 4 → 1), all due on the same second (their cron schedule, started together), so N
//! instances run at once, and waits until all have finished; they fire again every 10 s, and the
//! last of `--rounds N` fires (default 2: one to warm up) is measured; with three or more, the
//! mean CPU over all fires after the first is reported too (one fire's varies by a tenth or
//! more from the next, so that mean is the figure to compare). Reports the wall time,
//! the admin process's CPU per node run from before the fire is made (the admin makes it up to
//! its lookahead, 3 s, ahead) to the end (to hold against `admin_load`'s CPU per job fire, also
//! measured warm: both include claiming, sending and recording results), and per-node lateness:
//! from the moment the last parent's result was recorded to the moment the node's run was
//! created (p50/p99/max), and from that creation to the run's send; for the first nodes, from
//! the fire time to the send.
//!
//! cargo build --release -p chime-admin --examples
//! target/release/examples/workflow_load --instances 1000
//!
//! `--every S --steady SECS` measures a steady load instead: the workflows fire every S seconds
//! (a divisor of 60), so instances of one fire still run when the next starts, and the admin's
//! CPU is measured over SECS seconds from `--warm` seconds (default 6) after the first fire, per
//! node run sent in that window; instances' end-to-end times show whether it keeps up. This is
//! the load to hold against `admin_load --jobs N` at the same rate (N = instances × 10 / S),
//! where the default rounds, one fire every 10 s, hold a burst against a steady stream.
//!
//! `LOAD_LOG=warn,sqlx::query=debug` logs every statement with its time (to stderr), for
//! seeing where the database's share goes.

use serde_json::{json, Value};
use sqlx::{Connection, Row};
use std::collections::HashMap;
use std::time::{Duration, Instant};

const API_TOKEN: &str = "workflow-load-token-0123456789abcdef";
/// How long before the fire time the measured window opens: the admin's default lookahead
/// (3 s), and a tick or two to spare.
const WINDOW_BEFORE_MS: i64 = 4_500;
const KEYS: [&str; 10] = ["root", "p1", "p2", "p3", "join", "q1", "q2", "q3", "q4", "last"];

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds (user + system) of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    (fields.get(11).and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0))
        / 100.0
}

/// How long the admin's idle CPU is measured before the window.
const IDLE_MS: i64 = 3_000;

/// This process's CPU, in cores, over the `IDLE_MS` before `at` (ms since the epoch), returning
/// at `at`.
async fn idle_cores_before(at: i64) -> f64 {
    sleep_until_ms(at - IDLE_MS).await;
    let cpu0 = cpu_seconds();
    sleep_until_ms(at).await;
    (cpu_seconds() - cpu0) / (IDLE_MS as f64 / 1000.0)
}

/// Sleeps until `at` (ms since the epoch), if that is still ahead.
async fn sleep_until_ms(at: i64) {
    let left = at - chime_admin::model::now_ms();
    if left > 0 {
        tokio::time::sleep(Duration::from_millis(left as u64)).await;
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn parents() -> HashMap<&'static str, Vec<&'static str>> {
    let mut p: HashMap<&str, Vec<&str>> = HashMap::new();
    for k in ["p1", "p2", "p3"] {
        p.insert(k, vec!["root"]);
    }
    p.insert("join", vec!["p1", "p2", "p3"]);
    for k in ["q1", "q2", "q3", "q4"] {
        p.insert(k, vec!["join"]);
    }
    p.insert("last", vec!["q1", "q2", "q3", "q4"]);
    p
}

/// The allocator the `chime` binary uses, as in `admin_load`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            std::env::var("LOAD_LOG").unwrap_or_else(|_| "warn".into()),
        ))
        .with_writer(std::io::stderr)
        .try_init();
    let instances = arg("--instances", 1000);
    let args: Vec<String> = std::env::args().collect();
    let dir = tempfile::tempdir().unwrap();
    let db_url = match args.iter().position(|a| a == "--db") {
        Some(i) => args.get(i + 1).cloned().expect("--db takes a database URL"),
        None => format!("sqlite://{}/load.db", dir.path().display()),
    };
    let mut config = chime_admin::AdminConfig::new(db_url.clone());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.default_time_zone = "UTC".into();
    config.admin_password = Some("load".into());
    config.api_token = Some(API_TOKEN.into());
    // The token of admin_load's executor, which this tool runs.
    config.access_token = Some("load-access-token-0123456789abcdef".into());
    let admin = chime_admin::start(config).await.expect("admin");
    let base = format!("http://{}", admin.local_addr);

    // The executor: admin_load's, in its own process, so only the admin's CPU is counted here.
    let exe = std::env::current_exe().unwrap().with_file_name("admin_load");
    let mut child = tokio::process::Command::new(&exe)
        .args([
            "--executor-child",
            &base,
            &dir.path().join("received.txt").display().to_string(),
        ])
        .stdout(std::process::Stdio::piped())
        .stdin(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{} (build the examples first): {e}", exe.display()));
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().unwrap()));
    let exec_addr = lines.next_line().await.unwrap().expect("executor address");

    let (http, api) = (reqwest::Client::new(), base.clone());
    let post = move |path: String, body: Value| {
        let http = http.clone();
        let base = api.clone();
        async move {
            let resp = http
                .post(format!("{base}{path}"))
                .bearer_auth(API_TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = resp.status();
            let v: Value = resp.json().await.unwrap_or_default();
            assert!(status.is_success(), "{path}: {status} {v}");
            v
        }
    };
    post(
        "/v1/groups".into(),
        json!({"app_name": "load", "address_type": "manual", "addresses": [exec_addr]}),
    )
    .await;
    admin.admin.directory.refresh().await.unwrap();
    let mut nodes = Vec::new();
    for key in KEYS {
        let job = post("/v1/jobs".into(), json!({"group": "load", "handler": "noop"})).await;
        nodes.push(json!({"key": key, "job_id": job["id"]}));
    }
    let edges: Vec<Value> = parents()
        .iter()
        .flat_map(|(child, ps)| ps.iter().map(move |p| json!({"from": p, "to": child})))
        .collect();
    let definition = json!({"nodes": nodes, "edges": edges});
    let every = arg("--every", 10);
    assert!(
        (1..=60).contains(&every) && 60 % every == 0,
        "--every takes a divisor of 60"
    );
    let steady = arg("--steady", 0);
    let schedule = if every == 1 {
        "* * * * * ?".to_owned()
    } else {
        format!("0/{every} * * * * ?")
    };
    for k in 0..instances {
        post(
            "/v1/workflows".into(),
            json!({"name": format!("load-{k}"), "schedule_type": "CRON", "schedule_expr": schedule,
                   "definition": definition}),
        )
        .await;
    }
    let mut conn = {
        sqlx::any::install_default_drivers();
        sqlx::AnyConnection::connect(&db_url).await.unwrap()
    };
    // All due on one second, started together in the database, as if their schedules had
    // brought them to the same fire time: 3 to 13 s from now for the rounds; for a steady load,
    // far enough ahead for the idle measurement before the first fire is made.
    let now = chime_admin::model::now_ms();
    let due = if steady > 0 {
        let period = every as i64 * 1000;
        (now + WINDOW_BEFORE_MS + IDLE_MS + 1_000) / period * period + period
    } else {
        (now + 3_000) / 10_000 * 10_000 + 10_000
    };
    sqlx::query(&format!(
        "UPDATE workflow SET running = 1, anchor_at = {now}, next_fire_at = {due}"
    ))
    .execute(&mut conn)
    .await
    .unwrap();
    if steady > 0 {
        measure_steady(&mut conn, instances, every, due, steady, &db_url).await;
        drop(child);
        admin.shutdown().await;
        return;
    }
    // The workflows fire every 10 s: the first fires warm the admin up (its heap, connections
    // and statement caches grow to their working size, as in a running admin, and as
    // `admin_load` warms up before its window); the last one is measured.
    let rounds = arg("--rounds", 2).max(1) as i64;
    let due = due + (rounds - 1) * 10_000;
    let mut cpu = 0.0;
    let mut window_s = 0.0;
    let mut idle_cores = 0.0;
    let mut wall = 0;
    // CPU and window of every fire after the first, for the mean over the warm fires.
    let mut warm: Vec<(f64, f64)> = Vec::new();
    for round in 1..=rounds {
        let due = due - (rounds - round) * 10_000;
        // From before the fire is made: the admin makes a fire's instance and first runs up to
        // its lookahead (3 s) ahead of the fire time, and that is part of what a fire costs.
        let window_at = due - WINDOW_BEFORE_MS;
        if round == rounds {
            // The admin's CPU while nothing is due (its ticks, leases, this tool's polls),
            // measured just before the window: a fixed cost per second, not per node, which
            // `admin_load` spreads over ten thousand fires a second and this window's few
            // seconds over its node runs only. Reported apart, so both can be compared.
            idle_cores = idle_cores_before(window_at).await;
        }
        sleep_until_ms(window_at).await;
        // For a profiler to attach to the window and leave it at "measured" (docs/BENCHMARKS.md).
        if round == rounds {
            println!("measuring: due at {due}");
        }
        let cpu0 = cpu_seconds();
        let t0 = Instant::now();
        // Polled every 50 ms from the fire time (nothing can finish before it), one row each
        // through the primary key and the state index: the admin's CPU is counted in this
        // process, so the poll must cost next to nothing (a `COUNT(*)` reads every instance
        // row, graph and all, or every open index entry) and run no more often than it has
        // to (polled through the 4.5 s before the fire time as well, it was a tenth of the
        // window's statements). The database is fresh and nothing is deleted, so the largest
        // instance id is how many were made. The finishing time is read from the instances
        // themselves, not from when the poll noticed.
        sleep_until_ms(due).await;
        loop {
            let row = sqlx::query(
                "SELECT (SELECT COALESCE(MAX(id), 0) FROM workflow_instance) AS made, \
                 (SELECT COUNT(*) FROM (SELECT 1 AS x FROM workflow_instance \
                  WHERE state IN ('queued', 'running') LIMIT 1) t) AS open",
            )
            .fetch_one(&mut conn)
            .await
            .unwrap();
            let made: i64 = row.try_get("made").unwrap();
            let open: i64 = row.try_get("open").unwrap();
            if made >= instances as i64 * round && open == 0 {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(600),
                "instances still open after 600 s ({made} of {} made)",
                instances as i64 * round
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cpu = cpu_seconds() - cpu0;
        window_s = t0.elapsed().as_secs_f64();
        if round > 1 {
            warm.push((cpu, window_s));
        }
        if round == rounds {
            println!("measured");
        }
        let last: i64 = sqlx::query(&format!(
            "SELECT COALESCE(MAX(finished_at), 0) AS t FROM workflow_instance WHERE scheduled_at = {due}"
        ))
        .fetch_one(&mut conn)
        .await
        .unwrap()
        .try_get("t")
        .unwrap();
        wall = last - due;
        if round < rounds {
            println!(
                "warm-up fire {round}: finished {:.2} s after the fire time, admin CPU {:.0} us per node run",
                wall as f64 / 1000.0,
                cpu * 1e6 / (instances as f64 * KEYS.len() as f64)
            );
        }
    }
    sqlx::query("UPDATE workflow SET running = 0, next_fire_at = 0")
        .execute(&mut conn)
        .await
        .unwrap();

    let rows = sqlx::query(&format!(
        "SELECT n.instance_id AS instance_id, n.node AS node, n.state AS state, r.created_at AS created_at, \
         r.triggered_at AS triggered_at, r.handled_at AS handled_at \
         FROM workflow_node_run n JOIN run r ON r.id = n.run_id \
         JOIN workflow_instance i ON i.id = n.instance_id WHERE i.scheduled_at = {due}"
    ))
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let mut by_instance: HashMap<i64, HashMap<String, (i64, i64, i64)>> = HashMap::new();
    let mut succeeded = 0;
    for r in &rows {
        let state: String = r.try_get("state").unwrap_or_default();
        succeeded += usize::from(state == "succeeded");
        by_instance
            .entry(r.try_get("instance_id").unwrap())
            .or_default()
            .insert(
                r.try_get("node").unwrap(),
                (
                    r.try_get("created_at").unwrap(),
                    r.try_get("triggered_at").unwrap(),
                    r.try_get("handled_at").unwrap(),
                ),
            );
    }
    let parents = parents();
    let (mut step, mut send, mut first) = (Vec::new(), Vec::new(), Vec::new());
    for nodes in by_instance.values() {
        for (node, (created, triggered, _)) in nodes {
            match parents.get(node.as_str()) {
                Some(ps) => {
                    send.push(triggered - created);
                    let last = ps.iter().filter_map(|p| nodes.get(*p)).map(|n| n.2).max().unwrap_or(0);
                    step.push(created - last);
                }
                None => first.push(triggered - due),
            }
        }
    }
    step.sort_unstable();
    send.sort_unstable();
    first.sort_unstable();
    let node_runs = rows.len();
    println!(
        "{instances} instances x {} nodes on {}, due on one second: {node_runs} node runs ({succeeded} succeeded), all finished {:.2} s after the fire time",
        KEYS.len(),
        db_url.split(':').next().unwrap_or(""),
        wall as f64 / 1000.0
    );
    println!(
        "admin CPU {:.2} s = {:.0} us per node run",
        cpu,
        cpu * 1e6 / node_runs.max(1) as f64
    );
    let above_idle = cpu - idle_cores * window_s;
    println!(
        "admin CPU above idle {above_idle:.2} s = {:.0} us per node run (idle admin {idle_cores:.3} cores over the {window_s:.1} s window)",
        above_idle * 1e6 / node_runs.max(1) as f64
    );
    // One fire's CPU varies by a tenth or more from the next in the same process (what the
    // database does in the background lands in one window or another): the mean over the warm
    // fires is the figure to compare, with each fire's to show the spread.
    if warm.len() > 1 {
        let per_node =
            |(cpu, window_s): &(f64, f64)| (cpu - idle_cores * window_s) * 1e6 / (instances as f64 * KEYS.len() as f64);
        let each: Vec<String> = warm.iter().map(|w| format!("{:.0}", per_node(w))).collect();
        println!(
            "mean over the {} warm fires (2 to {rounds}): admin CPU above idle {:.1} us per node run (each: {})",
            warm.len(),
            warm.iter().map(per_node).sum::<f64>() / warm.len() as f64,
            each.join(", ")
        );
    }
    println!(
        "first nodes, fire time -> sent: p50 {} ms, p99 {} ms, max {} ms",
        percentile(&first, 0.5),
        percentile(&first, 0.99),
        first.last().copied().unwrap_or(0)
    );
    println!(
        "node lateness, last parent's result recorded -> node's run created: p50 {} ms, p99 {} ms, max {} ms",
        percentile(&step, 0.5),
        percentile(&step, 0.99),
        step.last().copied().unwrap_or(0)
    );
    println!(
        "later nodes, run created -> sent: p50 {} ms, p99 {} ms, max {} ms",
        percentile(&send, 0.5),
        percentile(&send, 0.99),
        send.last().copied().unwrap_or(0)
    );
    drop(child);
    admin.shutdown().await;
}

/// The steady load of `--every S --steady SECS`: the admin's idle CPU before the first fire is
/// made, then its CPU over SECS seconds from `--warm` seconds after the first fire, per node
/// run sent in that window, and how long the instances that fired in it took.
async fn measure_steady(conn: &mut sqlx::AnyConnection, instances: u64, every: u64, due: i64, secs: u64, db_url: &str) {
    let idle_cores = idle_cores_before(due - WINDOW_BEFORE_MS).await;
    let start = due + arg("--warm", 6) as i64 * 1000;
    sleep_until_ms(start).await;
    // For a profiler to attach to the window (docs/BENCHMARKS.md).
    println!("measuring: steady window of {secs} s");
    let cpu0 = cpu_seconds();
    let end = start + secs as i64 * 1000;
    sleep_until_ms(end).await;
    let cpu = cpu_seconds() - cpu0;
    sqlx::query("UPDATE workflow SET running = 0, next_fire_at = 0")
        .execute(&mut *conn)
        .await
        .unwrap();
    // Node runs sent and finished in the window (every run of this load is a node's).
    let counted = sqlx::query(&format!(
        "SELECT (SELECT COUNT(*) FROM run WHERE triggered_at >= {start} AND triggered_at < {end}) AS sent, \
         (SELECT COUNT(*) FROM run WHERE handled_at >= {start} AND handled_at < {end}) AS finished"
    ))
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    let sent: i64 = counted.try_get("sent").unwrap();
    let finished: i64 = counted.try_get("finished").unwrap();
    // Instances that fired inside the window: fire time to their end, once the last of them
    // had time to finish.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut took: Vec<i64> = sqlx::query(&format!(
        "SELECT CASE WHEN finished_at > 0 THEN finished_at - scheduled_at ELSE -1 END AS took \
         FROM workflow_instance WHERE scheduled_at >= {start} AND scheduled_at < {end}"
    ))
    .fetch_all(&mut *conn)
    .await
    .unwrap()
    .iter()
    .map(|r| r.try_get("took").unwrap())
    .collect();
    let unfinished = took.iter().filter(|t| **t < 0).count();
    took.retain(|t| *t >= 0);
    took.sort_unstable();
    let secs_f = secs as f64;
    let above = cpu - idle_cores * secs_f;
    println!(
        "steady: {instances} instances x {} nodes fired every {every} s on {}, measured {secs} s: \
         {sent} node runs sent ({:.0}/s), {finished} finished",
        KEYS.len(),
        db_url.split(':').next().unwrap_or(""),
        sent as f64 / secs_f
    );
    println!(
        "steady: admin CPU {cpu:.2} s = {:.1} us per node run sent; above idle {:.1} us per node run sent (idle admin {idle_cores:.3} cores)",
        cpu * 1e6 / sent.max(1) as f64,
        above * 1e6 / sent.max(1) as f64
    );
    println!(
        "steady: instances fired in the window, fire time -> finished: p50 {} ms, p99 {} ms, max {} ms ({} of {} not finished 5 s after the window closed)",
        percentile(&took, 0.5),
        percentile(&took, 0.99),
        took.last().copied().unwrap_or(0),
        unfinished,
        took.len() + unfinished
    );
}
