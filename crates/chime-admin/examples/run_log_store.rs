//! What keeping run logs costs the admin (docs/BENCHMARKS.md, "Run logs kept by the admin"):
//! N logs of a typical size posted to `POST /api/runLog` as Chime executors send them, first to
//! a group that does not keep logs (the request is read, parsed and authorised, nothing is
//! written), then to one that does. The difference is the cost of storing. Prints, for each,
//! wall time, logs per second, the latency of one post (p50, p99) and the process's CPU per
//! log (admin and the posting client together, so only the difference counts), then the
//! database space the stored logs take.
//!
//! cargo run --release -p chime-admin --example run_log_store -- --logs 5000 --bytes 2048 \
//!     [--concurrency 8] [--db mysql://root@127.0.0.1:3306/chime_bench]

use chime_admin::config::AdminConfig;
use chime_admin::model::{now_ms, GroupSpec, JobSpec};
use chime_admin::store::NewRun;
use chime_protocol::{RunLogParam, TriggerType};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_owned())
}

/// CPU seconds (user + system) this process used so far.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    ticks / 100.0
}

/// A run log of about `bytes` bytes, in the shape the executor writes: timestamped lines.
fn typical_log(bytes: usize) -> String {
    let mut log = String::from(
        "2026-11-24 10:00:00 <br>----------- xxl-job job execute start -----------<br>----------- Param:\n",
    );
    let mut i = 0;
    while log.len() < bytes {
        log.push_str(&format!(
            "2026-11-24 10:00:00 processed batch {i}: 500 records, 0 errors, 12 ms\n"
        ));
        i += 1;
    }
    log
}

const TOKEN: &str = "bench-token";

#[tokio::main]
async fn main() {
    let n: usize = arg("--logs", "5000").parse().expect("--logs N");
    let bytes: usize = arg("--bytes", "2048").parse().expect("--bytes N");
    let concurrency: usize = arg("--concurrency", "8").parse().expect("--concurrency N");
    let dir = tempfile::tempdir().unwrap();
    let url = arg("--db", &format!("sqlite://{}/bench.db", dir.path().display()));
    let mut config = AdminConfig::new(&url);
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.access_token = Some(TOKEN.to_owned());
    config.admin_password = Some("bench-password".to_owned());
    let handle = chime_admin::start(config).await.expect("admin starts");
    let store = handle.admin.store.clone();
    let base = format!("http://{}", handle.local_addr);
    let log = typical_log(bytes);
    let http = reqwest::Client::new();

    for (app, keep) in [("bench-off", false), ("bench-on", true)] {
        let group = store
            .insert_group(
                &GroupSpec {
                    app_name: Some(app.into()),
                    keep_logs: Some(keep),
                    ..Default::default()
                }
                .validate(None, &Default::default())
                .unwrap(),
            )
            .await
            .unwrap();
        let draft = JobSpec {
            group_id: Some(group.id),
            task: chime_admin::api::JobTaskPatch {
                handler: Some("noop".into()),
                ..Default::default()
            },
            ..Default::default()
        }
        .validate(None, "UTC", group.id)
        .unwrap();
        let job = store.insert_job(&draft, "bench").await.unwrap();
        let mut ids = Vec::with_capacity(n);
        for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
            let runs: Vec<NewRun> = chunk
                .iter()
                .map(|_| NewRun::of_job(&job, TriggerType::Manual, now_ms(), None))
                .collect();
            ids.extend(store.insert_runs(&runs).await.unwrap().into_iter().map(|t| t.id));
        }
        handle.admin.directory.refresh().await.unwrap();
        let bodies: Vec<String> = ids
            .iter()
            .map(|&id| serde_json::to_string(&RunLogParam::from_log(app, id, 0, log.as_bytes(), usize::MAX)).unwrap())
            .collect();
        let bodies = Arc::new(std::sync::Mutex::new(bodies));
        let cpu0 = cpu_secs();
        let started = Instant::now();
        let workers: Vec<_> = (0..concurrency)
            .map(|_| {
                let (http, bodies, url) = (http.clone(), bodies.clone(), format!("{base}/api/runLog"));
                tokio::spawn(async move {
                    let mut latencies = Vec::new();
                    loop {
                        let Some(body) = bodies.lock().unwrap().pop() else {
                            break;
                        };
                        let t = Instant::now();
                        let reply: serde_json::Value = http
                            .post(&url)
                            .header("XXL-JOB-ACCESS-TOKEN", TOKEN)
                            .header("content-type", "application/json")
                            .body(body)
                            .send()
                            .await
                            .unwrap()
                            .json()
                            .await
                            .unwrap();
                        assert_eq!(reply["code"], 200, "{reply}");
                        latencies.push(t.elapsed());
                    }
                    latencies
                })
            })
            .collect();
        let mut latencies: Vec<Duration> = Vec::new();
        for w in workers {
            latencies.extend(w.await.unwrap());
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu = cpu_secs() - cpu0;
        latencies.sort();
        let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
        println!(
            "keep_logs={keep} logs={n} bytes={} wall_s={wall:.2} logs_per_s={:.0} p50_ms={:.2} p99_ms={:.2} cpu_us_per_log={:.0}",
            log.len(),
            n as f64 / wall,
            pct(0.5).as_secs_f64() * 1e3,
            pct(0.99).as_secs_f64() * 1e3,
            cpu / n as f64 * 1e6
        );
        let stored = store.stored_run_log(ids[0]).await.unwrap();
        assert_eq!(stored.is_some(), keep, "stored only where the group keeps logs");
    }
    println!("database: {}", space(&url, dir.path()).await);
    handle.shutdown().await;
}

/// The space the `run_log` table takes, as the database reports it.
async fn space(url: &str, dir: &std::path::Path) -> String {
    use sqlx::Connection;
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    let q = if url.starts_with("sqlite") {
        // SQLite's own page count of the table and its index (the dbstat table), else the
        // files' size.
        let pages = sqlx::query("SELECT CAST(SUM(pgsize) AS BIGINT) FROM dbstat WHERE name LIKE '%run_log%'")
            .fetch_one(&mut conn)
            .await;
        if let Ok(row) = pages {
            let n: i64 = sqlx::Row::try_get(&row, 0).unwrap_or(0);
            return format!("run_log {} KiB", n / 1024);
        }
        let size: u64 = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.metadata().map_or(0, |m| m.len()))
            .sum();
        return format!("sqlite files {} KiB in all (every table)", size / 1024);
    } else if url.starts_with("mysql") {
        sqlx::raw_sql("ANALYZE TABLE run_log").execute(&mut conn).await.unwrap();
        "SELECT CAST(data_length + index_length AS SIGNED) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name = 'run_log'"
    } else {
        "SELECT pg_total_relation_size('run_log')::BIGINT"
    };
    let row = sqlx::query(q).fetch_one(&mut conn).await.unwrap();
    let n: i64 = sqlx::Row::get(&row, 0);
    format!("run_log {} KiB", n / 1024)
}
