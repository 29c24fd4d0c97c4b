//! Load generator for the executor benchmark (docs/BENCHMARKS.md, "Executor SDK").
//!
//! Plays the admin: sends `POST /run` for `noopJobHandler` over keep-alive connections from
//! many concurrent clients (distinct job ids, so runs do not queue behind each other), and
//! serves `/xxl-job-admin/api/*` itself so that callbacks flow back. The no-op handler answers
//! with the epoch microseconds at which it started; against the send time of the trigger that
//! gives the trigger-to-handler-start latency.
//!
//! ```text
//! chime-demo-executor --admin http://127.0.0.1:18080/xxl-job-admin --listen 127.0.0.1:19999 --logdir /tmp/bench-logs &
//! cargo run --release -p chime-executor --example run_load -- --executor 127.0.0.1:19999 --admin-listen 127.0.0.1:18080
//! ```

use axum::body::Bytes;
use clap::Parser;
use hdrhistogram::Histogram;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Parser, Debug)]
struct Args {
    /// Executor address (host:port).
    #[arg(long, default_value = "127.0.0.1:19999")]
    executor: SocketAddr,
    /// Where the fake admin listens (the executor's --admin must point here + /xxl-job-admin).
    #[arg(long, default_value = "127.0.0.1:18080")]
    admin_listen: SocketAddr,
    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Seconds of load.
    #[arg(long, default_value_t = 20)]
    duration: u64,
    /// Seconds of warm-up excluded from the numbers.
    #[arg(long, default_value_t = 3)]
    warmup: u64,
    /// Distinct job ids to cycle through.
    #[arg(long, default_value_t = 10_000)]
    jobs: u64,
    /// Target triggers per second over all connections (0 = as fast as possible).
    #[arg(long, default_value_t = 0)]
    rate: u64,
    /// Executor pid: sample its RSS every --rss-every seconds.
    #[arg(long)]
    executor_pid: Option<u32>,
    /// Seconds between RSS samples / progress lines.
    #[arg(long, default_value_t = 10)]
    rss_every: u64,
    /// Access token.
    #[arg(long, default_value = "")]
    token: String,
}

const SLOTS: usize = 1 << 22;

struct Shared {
    /// Send time (µs since epoch) by `logId % SLOTS`.
    sent_us: Vec<AtomicU64>,
    measuring: AtomicBool,
    latency: Mutex<Histogram<u64>>,
    callbacks: AtomicU64,
    callbacks_measured: AtomicU64,
    runs_ok: AtomicU64,
    runs_failed: AtomicU64,
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

/// User + system CPU seconds of a process, from `/proc/<pid>/stat` (fields 14 and 15, in
/// clock ticks; Linux's tick is 100 Hz on every mainstream configuration).
fn cpu_secs(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces: fields are counted after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Busy and total CPU seconds of the whole machine (all cores), from `/proc/stat`.
fn machine_cpu_secs() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let ticks: Vec<f64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    let total: f64 = ticks.iter().take(8).sum();
    // idle + iowait are not busy.
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0.0);
    Some(((total - idle) / 100.0, total / 100.0))
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let shared = Arc::new(Shared {
        sent_us: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
        measuring: AtomicBool::new(false),
        latency: Mutex::new(Histogram::new_with_bounds(1, 60_000_000, 3).unwrap()),
        callbacks: AtomicU64::new(0),
        callbacks_measured: AtomicU64::new(0),
        runs_ok: AtomicU64::new(0),
        runs_failed: AtomicU64::new(0),
    });

    // The fake admin.
    let admin_state = shared.clone();
    let app = axum::Router::new()
        .route("/xxl-job-admin/api/registry", axum::routing::post(|| async { ok() }))
        .route(
            "/xxl-job-admin/api/registryRemove",
            axum::routing::post(|| async { ok() }),
        )
        .route(
            "/xxl-job-admin/api/callback",
            axum::routing::post(move |body: Bytes| {
                let shared = admin_state.clone();
                async move {
                    record_callbacks(&shared, &body);
                    ok()
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind(args.admin_listen)
        .await
        .expect("bind the fake admin");
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let stop = Arc::new(AtomicBool::new(false));
    let next_log_id = Arc::new(AtomicU64::new(1));
    let per_conn_interval =
        (args.rate > 0).then(|| Duration::from_secs_f64(args.connections as f64 / args.rate as f64));
    let mut clients = Vec::new();
    for _ in 0..args.connections {
        let (stop, next, shared, token) = (stop.clone(), next_log_id.clone(), shared.clone(), args.token.clone());
        let (executor, jobs) = (args.executor, args.jobs);
        clients.push(tokio::spawn(async move {
            client(executor, jobs, token, stop, next, shared, per_conn_interval).await;
        }));
    }

    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(args.warmup)).await;
    shared.measuring.store(true, Ordering::SeqCst);
    let ok0 = shared.runs_ok.load(Ordering::SeqCst);
    let cb0 = shared.callbacks.load(Ordering::SeqCst);
    let t0 = Instant::now();
    let exec_cpu0 = args.executor_pid.and_then(|p| cpu_secs(&p.to_string()));
    let self_cpu0 = cpu_secs("self");
    let machine0 = machine_cpu_secs();
    let mut rss_samples = Vec::new();
    if let Some(pid) = args.executor_pid {
        rss_samples.push((0u64, rss_kib(pid)));
    }
    let mut last = Instant::now();
    while t0.elapsed() < Duration::from_secs(args.duration) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if last.elapsed() >= Duration::from_secs(args.rss_every) {
            last = Instant::now();
            let secs = t0.elapsed().as_secs();
            let rss = args.executor_pid.and_then(rss_kib);
            if args.executor_pid.is_some() {
                rss_samples.push((secs, rss));
            }
            let done = shared.runs_ok.load(Ordering::SeqCst) - ok0;
            eprintln!(
                "t={secs:>4}s runs={done} ({:.0}/s) callbacks={} rss={:?} KiB",
                done as f64 / t0.elapsed().as_secs_f64(),
                shared.callbacks.load(Ordering::SeqCst) - cb0,
                rss
            );
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let runs = shared.runs_ok.load(Ordering::SeqCst) - ok0;
    let exec_cpu = args
        .executor_pid
        .and_then(|p| cpu_secs(&p.to_string()))
        .zip(exec_cpu0)
        .map(|(b, a)| b - a);
    let self_cpu = cpu_secs("self").zip(self_cpu0).map(|(b, a)| b - a);
    let machine = machine_cpu_secs().zip(machine0).map(|(b, a)| (b.0 - a.0, b.1 - a.1));
    let cbs = shared.callbacks.load(Ordering::SeqCst) - cb0;
    stop.store(true, Ordering::SeqCst);
    shared.measuring.store(false, Ordering::SeqCst);
    if let Some(pid) = args.executor_pid {
        rss_samples.push((elapsed as u64, rss_kib(pid)));
    }
    for c in clients {
        let _ = c.await;
    }
    // Let the last callbacks arrive.
    let sent = next_log_id.load(Ordering::SeqCst) - 1;
    let deadline = Instant::now() + Duration::from_secs(15);
    while shared.callbacks.load(Ordering::SeqCst) < sent - shared.runs_failed.load(Ordering::SeqCst)
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let h = shared.latency.lock().unwrap();
    println!("connections          {}", args.connections);
    println!(
        "measured             {elapsed:.1} s (after {} s warm-up; total {:.1} s)",
        args.warmup,
        start.elapsed().as_secs_f64()
    );
    println!("/run accepted        {runs} ({:.0}/s)", runs as f64 / elapsed);
    println!("callbacks received   {cbs} ({:.0}/s)", cbs as f64 / elapsed);
    println!("/run failed          {}", shared.runs_failed.load(Ordering::SeqCst));
    println!(
        "all triggers sent    {sent}, callbacks received in total {} (missing {})",
        shared.callbacks.load(Ordering::SeqCst),
        sent.saturating_sub(shared.callbacks.load(Ordering::SeqCst) + shared.runs_failed.load(Ordering::SeqCst))
    );
    println!(
        "trigger->start µs    p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (n={})",
        h.value_at_quantile(0.50),
        h.value_at_quantile(0.90),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.max(),
        h.len()
    );
    // Where the two cores went during the measured window: a load generator near a full core
    // would mean it, not the executor, sets the pace.
    let cores = |secs: f64| secs / elapsed;
    if let Some(cpu) = exec_cpu {
        println!(
            "executor CPU         {:.2} cores ({:.1} µs per run)",
            cores(cpu),
            cpu * 1e6 / runs.max(1) as f64
        );
    }
    if let Some(cpu) = self_cpu {
        println!("load generator CPU   {:.2} cores", cores(cpu));
    }
    if let Some((busy, total)) = machine {
        let others = busy - exec_cpu.unwrap_or(0.0) - self_cpu.unwrap_or(0.0);
        println!(
            "machine              {:.2} of {:.2} cores busy; everything else (kernel writeback, other processes) {:.2}",
            cores(busy),
            cores(total),
            cores(others)
        );
    }
    for (secs, rss) in rss_samples {
        println!(
            "executor RSS t={secs:>4}s  {} KiB",
            rss.map_or("?".to_owned(), |r| r.to_string())
        );
    }
}

fn ok() -> ([(&'static str, &'static str); 1], &'static str) {
    (
        [("content-type", "application/json")],
        r#"{"code":200,"msg":null,"content":null}"#,
    )
}

fn record_callbacks(shared: &Shared, body: &[u8]) {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Item {
        log_id: u64,
        handle_msg: Option<String>,
    }
    let items: Vec<Item> = serde_json::from_slice(body).expect("callback array");
    shared.callbacks.fetch_add(items.len() as u64, Ordering::SeqCst);
    if !shared.measuring.load(Ordering::Relaxed) {
        return;
    }
    let mut h = shared.latency.lock().unwrap();
    for item in items {
        let sent = shared.sent_us[(item.log_id as usize) % SLOTS].load(Ordering::Relaxed);
        if let Some(started) = item.handle_msg.and_then(|m| m.parse::<u64>().ok()) {
            if sent > 0 && started >= sent {
                let _ = h.record(started - sent);
                shared.callbacks_measured.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// One keep-alive connection sending triggers one after another (HTTP/1.1, no pipelining).
async fn client(
    executor: SocketAddr,
    jobs: u64,
    token: String,
    stop: Arc<AtomicBool>,
    next: Arc<AtomicU64>,
    shared: Arc<Shared>,
    interval: Option<Duration>,
) {
    let mut stream = TcpStream::connect(executor).await.expect("connect to the executor");
    stream.set_nodelay(true).unwrap();
    let mut buf = vec![0u8; 4096];
    let token_header = if token.is_empty() {
        String::new()
    } else {
        format!("XXL-JOB-ACCESS-TOKEN: {token}\r\n")
    };
    let mut ticker = interval.map(|i| {
        let mut t = tokio::time::interval(i);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    while !stop.load(Ordering::Relaxed) {
        if let Some(t) = ticker.as_mut() {
            t.tick().await;
        }
        let log_id = next.fetch_add(1, Ordering::Relaxed);
        let job_id = log_id % jobs + 1;
        let now = now_us();
        let body = format!(
            r#"{{"jobId":{job_id},"executorHandler":"noopJobHandler","executorParams":"","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":{log_id},"logDateTime":{},"glueType":"BEAN","glueSource":"","glueUpdatetime":0,"broadcastIndex":0,"broadcastTotal":1}}"#,
            now / 1000
        );
        let request = format!(
            "POST /run HTTP/1.1\r\nHost: {executor}\r\nContent-Type: application/json;charset=UTF-8\r\n{token_header}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        shared.sent_us[(log_id as usize) % SLOTS].store(now, Ordering::Relaxed);
        stream.write_all(request.as_bytes()).await.expect("send");
        // Read one response: headers, then Content-Length bytes.
        let mut filled = 0;
        let (header_end, content_length) = loop {
            let n = stream.read(&mut buf[filled..]).await.expect("read");
            assert!(n > 0, "executor closed the connection");
            filled += n;
            if let Some(pos) = find(&buf[..filled], b"\r\n\r\n") {
                let head = std::str::from_utf8(&buf[..pos]).unwrap().to_ascii_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse::<usize>().unwrap())
                    .unwrap_or(0);
                break (pos + 4, len);
            }
        };
        while filled < header_end + content_length {
            let n = stream.read(&mut buf[filled..]).await.expect("read");
            assert!(n > 0, "executor closed the connection");
            filled += n;
        }
        if find(&buf[header_end..filled], br#""code":200"#).is_some() {
            shared.runs_ok.fetch_add(1, Ordering::Relaxed);
        } else {
            shared.runs_failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
