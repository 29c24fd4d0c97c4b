//! Load tool for the scheduling center (docs/BENCHMARKS.md, "Scheduling center").
//!
//! Starts the admin in-process on a fresh SQLite file and, in a child process (the same binary
//! with `--executor-child`), a minimal G2 executor that accepts `/run`, records when each run
//! arrived and reports results in batched callbacks. Defines JOBS jobs firing every second and
//! measures for SECS seconds: fires per second received by the executor, lateness from
//! scheduled time to executor receipt (p50/p99/max), the CPU of the admin process and of the
//! executor process, and the admin's peak RSS. `--define N` instead defines N daily jobs (none
//! due) and reports memory with the scheduler running over them.
//!
//! `--db URL` uses that (empty) database instead of a fresh SQLite file, e.g. PostgreSQL, where
//! runs are also marked as being sent before each send (the fencing of several admins).
//!
//! `--spread` makes the jobs fixed-rate 1 s with anchors spread over the second instead of all
//! on the same whole second; `--in-process` runs the executor inside the admin's process.
//! `--api-create N` also creates N daily jobs through the REST API during the window, from
//! `--clients C` (default 8) keep-alive clients on a thread of their own, and reports the
//! creation rate and its latency percentiles.
//!
//! `--link` makes the executor child link to the admin (a WebSocket it dials, see
//! `chime_protocol::link`) instead of listening: triggers go down the link, callbacks up it, so
//! link mode and HTTP mode are measured on the same load. `--hold-links N` instead opens N links
//! from the child (N executors, each registered once) and reports the admin's RSS before and
//! after.
//!
//! cargo run --release -p chime-admin --example admin_load -- --jobs 10000 --secs 30

use chime_admin::model::{now_ms, JobSpec};
use chime_protocol::{CallbackBatch, HandleCallbackParam, TriggerParam};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The admin's API token for `--api-create`.
const API_TOKEN: &str = "load-api-token-0123456789abcdef";
/// The executor access token of the admin and of the load executor (`workflow_load` gives its
/// admin the same one, as it runs this tool's executor).
const ACCESS_TOKEN: &str = "load-access-token-0123456789abcdef";

/// Creates `count` daily jobs in group `group_id` through `POST /v1/jobs` from `clients`
/// keep-alive clients on a thread of its own (so the load's CPU is not the admin runtime's
/// workers'). Returns each creation's latency in ms and the wall time of the whole, in s.
fn create_through_api(
    base: String,
    group_id: i64,
    count: u64,
    clients: u64,
) -> std::thread::JoinHandle<(Vec<f64>, f64)> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let t0 = std::time::Instant::now();
            let mut tasks = Vec::new();
            for _ in 0..clients {
                let (next, base) = (next.clone(), base.clone());
                tasks.push(tokio::spawn(async move {
                    let http = reqwest::Client::new();
                    let mut latencies = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= count {
                            return latencies;
                        }
                        let body = serde_json::json!({
                            "group_id": group_id, "description": format!("api job {i}"), "handler": "noop",
                            "schedule_type": "CRON", "schedule_expr": "0 0 3 * * ?", "running": true,
                        });
                        let t = std::time::Instant::now();
                        let resp = http
                            .post(format!("{base}/v1/jobs"))
                            .bearer_auth(API_TOKEN)
                            .json(&body)
                            .send()
                            .await
                            .expect("create job");
                        assert_eq!(
                            resp.status(),
                            201,
                            "create job: {}",
                            resp.text().await.unwrap_or_default()
                        );
                        let _ = resp.bytes().await;
                        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                }));
            }
            let mut all = Vec::new();
            for t in tasks {
                all.extend(t.await.unwrap());
            }
            (all, t0.elapsed().as_secs_f64())
        })
    })
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn proc_stats() -> (f64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss_kb = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0u64)
    };
    (ticks / 100.0, rss_kb("VmHWM:").max(rss_kb("VmRSS:")))
}

#[derive(Default)]
struct Seen {
    received: Vec<(i64, i64)>, // (log id, received at ms)
    pending: Vec<HandleCallbackParam>,
}

/// The minimal G2 executor: records when each `/run` arrived and reports success in batched
/// callbacks every 100 ms (one request with everything pending). Returns its address.
async fn start_executor(seen: Arc<Mutex<Seen>>, base: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let exec_addr = format!("http://{}", listener.local_addr().unwrap());
    let s2 = seen.clone();
    let app = axum::Router::new().route(
        "/{p}",
        axum::routing::post(
            move |axum::extract::Path(p): axum::extract::Path<String>, body: axum::body::Bytes| {
                let seen = s2.clone();
                async move {
                    if p == "run" {
                        note_trigger(&seen, &body);
                    }
                    r#"{"code":200}"#
                }
            },
        ),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let (s3, cb_base) = (seen.clone(), base.clone());
    tokio::spawn(async move {
        let http = reqwest::Client::new();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            // Everything pending in one request, as xxl-job-core's callback thread does: the
            // batch grows while the admin is slow to answer, so results never queue here.
            let batch = std::mem::take(&mut s3.lock().unwrap().pending);
            if !batch.is_empty() {
                let _ = http
                    .post(format!("{cb_base}/api/callback"))
                    .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
                    .json(&CallbackBatch(batch))
                    .send()
                    .await;
            }
        }
    });

    exec_addr
}

/// Records a trigger and queues its success for the next callback.
fn note_trigger(seen: &Mutex<Seen>, body: &[u8]) {
    if let Ok(t) = serde_json::from_slice::<TriggerParam>(body) {
        let mut s = seen.lock().unwrap();
        s.received.push((t.log_id, now_ms()));
        s.pending.push(HandleCallbackParam {
            log_id: t.log_id,
            log_date_tim: t.log_date_time,
            handle_code: 200,
            handle_msg: None,
        });
    }
}

/// Opens a link to the admin at `base` as executor `id` of app `load`; returns the channel of
/// frames to send and the stream of frames received.
async fn dial_link(
    base: &str,
    id: &str,
) -> (
    tokio::sync::mpsc::Sender<String>,
    futures::stream::SplitStream<
        tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    >,
) {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;
    let url = format!("{}/api/link", base.replacen("http://", "ws://", 1));
    let mut request = url.into_client_request().unwrap();
    request.headers_mut().insert("XXL-JOB-APPNAME", "load".parse().unwrap());
    request.headers_mut().insert("Chime-Executor-Id", id.parse().unwrap());
    request
        .headers_mut()
        .insert("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN.parse().unwrap());
    let (socket, _) = tokio_tungstenite::connect_async(request).await.expect("link");
    let (mut sink, stream) = socket.split();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(4096);
    tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if sink.send(Message::Text(frame.into())).await.is_err() {
                return;
            }
        }
    });
    (tx, stream)
}

/// The minimal linked executor: like [`start_executor`], but it dials the admin, answers the
/// calls coming down its link, and sends its batched callbacks up it. Returns its address.
async fn start_linked_executor(seen: Arc<Mutex<Seen>>, base: String) -> String {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let (tx, mut stream) = dial_link(&base, "load-1").await;
    let answers = tx.clone();
    let s2 = seen.clone();
    tokio::spawn(async move {
        while let Some(Ok(message)) = stream.next().await {
            let Message::Text(text) = message else { continue };
            let Ok(frame) = serde_json::from_str::<chime_protocol::link::LinkFrame>(text.as_str()) else {
                continue;
            };
            if frame.path.as_deref() == Some("/run") {
                note_trigger(&s2, frame.body.get().as_bytes());
            }
            if frame.is_call() {
                let _ = answers
                    .send(format!(r#"{{"id":{},"body":{{"code":200}}}}"#, frame.id))
                    .await;
            }
        }
    });
    let s3 = seen.clone();
    tokio::spawn(async move {
        let mut id = 0u64;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let batch = std::mem::take(&mut s3.lock().unwrap().pending);
            if !batch.is_empty() {
                id += 1;
                let body = serde_json::to_string(&CallbackBatch(batch)).unwrap();
                let _ = tx
                    .send(format!(r#"{{"id":{id},"path":"/api/callback","body":{body}}}"#))
                    .await;
            }
        }
    });
    chime_protocol::link::address("load-1")
}

/// `--executor-child ADMIN_BASE OUT_FILE [--link]`: runs the executor, prints its address, and
/// for each `dump` line on stdin writes `log_id received_ms` lines to OUT_FILE and answers `ok`.
/// Ends with stdin. `--links-child ADMIN_BASE N` instead holds N links that answer every call.
async fn executor_child(base: String, out: String, link: bool) {
    use tokio::io::AsyncBufReadExt;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let address = if link {
        start_linked_executor(seen.clone(), base).await
    } else {
        start_executor(seen.clone(), base).await
    };
    println!("{address}");
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line == "dump" {
            let text: String = seen
                .lock()
                .unwrap()
                .received
                .iter()
                .map(|(id, at)| format!("{id} {at}\n"))
                .collect();
            std::fs::write(&out, text).unwrap();
            println!("ok");
        }
    }
}

/// `--links-child ADMIN_BASE N`: N executors linked to the admin, each registered once; prints
/// `linked` when all are, then answers every call until stdin ends.
async fn links_child(base: String, n: u64) {
    use futures::StreamExt;
    use tokio::io::AsyncBufReadExt;
    use tokio_tungstenite::tungstenite::Message;
    for i in 0..n {
        let id = format!("hold-{i}");
        let (tx, mut stream) = dial_link(&base, &id).await;
        let registration = format!(
            r#"{{"id":1,"path":"/api/registry","body":{{"registryGroup":"EXECUTOR","registryKey":"load","registryValue":"link://{id}"}}}}"#
        );
        tx.send(registration).await.unwrap();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let Message::Text(text) = message else { continue };
                if let Ok(frame) = serde_json::from_str::<chime_protocol::link::LinkFrame>(text.as_str()) {
                    if frame.is_call() {
                        let _ = tx.send(format!(r#"{{"id":{},"body":{{"code":200}}}}"#, frame.id)).await;
                    }
                }
            }
        });
    }
    println!("linked");
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(_)) = lines.next_line().await {}
}

/// `--hold-links N`: the admin's RSS with N linked executors against none.
async fn hold_links(admin: &chime_admin::AdminHandle, base: &str, n: u64) {
    let rss_now = || {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = rss_now();
    let exe = std::env::current_exe().unwrap();
    let mut child = tokio::process::Command::new(exe)
        .args(["--links-child", base, &n.to_string()])
        .stdout(std::process::Stdio::piped())
        .stdin(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("links process");
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().unwrap()));
    let t = std::time::Instant::now();
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("linked"));
    while admin.admin.links.count() < n as usize {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let linked_s = t.elapsed().as_secs_f64();
    // Let the registrations land and a few pings pass.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let (cpu0, _) = proc_stats();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (cpu1, _) = proc_stats();
    let after = rss_now();
    println!(
        "links={n} linked_in_s={linked_s:.1} admin_rss_mb before={:.1} after={:.1} per_link_kb={:.1} idle_admin_cpu_cores={:.3}",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        after.saturating_sub(before) as f64 / n.max(1) as f64,
        (cpu1 - cpu0) / 10.0
    );
}

/// The allocator of the `chime` binary, so the numbers are the shipped binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    (fields.get(11).and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0))
        / 100.0
}

#[tokio::main]
async fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--executor-child") {
        let link = args.iter().any(|a| a == "--link");
        executor_child(args[i + 1].clone(), args[i + 2].clone(), link).await;
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--links-child") {
        links_child(args[i + 1].clone(), args[i + 2].parse().unwrap()).await;
        return;
    }
    let jobs = arg("--jobs", 1000);
    let secs = arg("--secs", 20);
    let define = arg("--define", 0);
    let dir = tempfile::tempdir().unwrap();
    // `--db URL` runs on another database (an empty one: the jobs are added to it).
    let db_url = match args.iter().position(|a| a == "--db") {
        Some(i) => args.get(i + 1).cloned().expect("--db takes a database URL"),
        None => format!("sqlite://{}/load.db", dir.path().display()),
    };
    let mut config = chime_admin::AdminConfig::new(db_url.clone());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.default_time_zone = "UTC".into();
    config.admin_password = Some("load".into());
    config.api_token = Some(API_TOKEN.into());
    config.access_token = Some(ACCESS_TOKEN.into());
    let admin = chime_admin::start(config).await.expect("admin");
    let base = format!("http://{}", admin.local_addr);
    let hold = arg("--hold-links", 0);
    if hold > 0 {
        hold_links(&admin, &base, hold).await;
        return;
    }
    let link = std::env::args().any(|a| a == "--link");

    // The executor, in its own process so the CPU of the admin and of the load are measured
    // apart (`--in-process` keeps it in this one).
    let in_process = std::env::args().any(|a| a == "--in-process");
    let out_file = dir.path().join("received.txt");
    let (exec_addr, seen, mut child) = if in_process {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let address = if link {
            start_linked_executor(seen.clone(), base.clone()).await
        } else {
            start_executor(seen.clone(), base.clone()).await
        };
        (address, Some(seen), None)
    } else {
        let exe = std::env::current_exe().unwrap();
        let mut child = tokio::process::Command::new(exe)
            .args(["--executor-child", &base, &out_file.display().to_string()])
            .args(link.then_some("--link"))
            .stdout(std::process::Stdio::piped())
            .stdin(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("executor process");
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().unwrap()));
        let addr = lines.next_line().await.unwrap().expect("executor address");
        (addr, None, Some((child, lines)))
    };

    let store = &admin.admin.store;
    let group = store
        .insert_group(
            &chime_admin::model::GroupSpec {
                app_name: Some("load".into()),
                addresses: Some(vec![exec_addr.clone()]),
                ..Default::default()
            }
            .validate(None, &Default::default())
            .unwrap(),
        )
        .await
        .unwrap();
    admin.admin.directory.refresh().await.unwrap();

    if define > 0 {
        let spec = JobSpec {
            group_id: Some(group.id),
            task: chime_admin::api::JobTaskPatch {
                handler: Some("noop".into()),
                ..Default::default()
            },
            schedule: chime_admin::api::SchedulePatch {
                schedule_type: Some("CRON".into()),
                schedule_expr: Some("0 0 3 * * ?".into()),
                ..Default::default()
            },
            running: Some(true),
            ..Default::default()
        };
        let draft = spec.validate(None, "UTC", group.id).unwrap();
        let t = std::time::Instant::now();
        for _ in 0..(define / 10_000).max(1) {
            let drafts = vec![draft.clone(); 10_000.min(define as usize)];
            store.insert_jobs_bulk(&drafts, group.id).await.unwrap();
        }
        eprintln!("defined {define} jobs in {:.1}s", t.elapsed().as_secs_f64());
        let (_, rss0) = proc_stats();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let (cpu, rss) = proc_stats();
        println!(
            "defined_jobs={define} peak_rss_mb={:.0} rss_after_define_mb={:.0} cpu_s={cpu:.1}",
            rss as f64 / 1024.0,
            rss0 as f64 / 1024.0
        );
        return;
    }

    // Aligned: cron `* * * * * ?`, every job on the same whole second. Spread: fixed rate 1 s
    // with the jobs' anchors spread evenly over the second (what many independent jobs look like).
    let spread = std::env::args().any(|a| a == "--spread");
    let spec = JobSpec {
        group_id: Some(group.id),
        task: chime_admin::api::JobTaskPatch {
            handler: Some("noop".into()),
            ..Default::default()
        },
        schedule: chime_admin::api::SchedulePatch {
            schedule_type: Some(if spread { "FIX_RATE" } else { "CRON" }.into()),
            schedule_expr: Some(if spread { "1" } else { "* * * * * ?" }.into()),
            ..Default::default()
        },
        running: Some(!spread),
        ..Default::default()
    };
    let draft = spec.validate(None, "UTC", group.id).unwrap();
    // The admin's CPU with nothing due (its ticks, leases, registry), a fixed cost per second
    // rather than per fire: reported apart, as `workflow_load` reports it, so that loads of
    // different lengths compare.
    let (idle0, _) = proc_stats();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle_cores = (proc_stats().0 - idle0) / 3.0;
    store
        .insert_jobs_bulk(&vec![draft; jobs as usize], group.id)
        .await
        .unwrap();
    if spread {
        // Straight to the database: the API has no way to pick a fixed-rate job's anchor.
        sqlx::any::install_default_drivers();
        let db = sqlx::AnyPool::connect(&db_url).await.unwrap();
        let base = (now_ms() / 1000 + 2) * 1000;
        let n = jobs.max(1) as i64;
        sqlx::query(&format!(
            "UPDATE job SET running = 1, anchor_at = {base} + (id % {n}) * 1000 / {n}, \
             next_fire_at = {base} + (id % {n}) * 1000 / {n}"
        ))
        .execute(&db)
        .await
        .unwrap();
        db.close().await;
    }
    admin.admin.wake_scheduler();
    // Warm up, then measure a window of whole seconds.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let child_pid = child.as_ref().and_then(|(c, _)| c.id());
    let child_cpu0 = child_pid.map(cpu_seconds).unwrap_or(0.0);
    // Sustained means the database keeps up too: results committed per second over the window
    // must match the fires, and the runs still open (claimed, sent, not yet recorded) must not
    // grow. The executor's receipts alone would count fires whose records are still queued.
    sqlx::any::install_default_drivers();
    let db = sqlx::AnyPool::connect(&db_url).await.unwrap();
    let done = || async {
        let row = sqlx::query("SELECT COUNT(*) FROM run WHERE handle_code <> 0")
            .fetch_one(&db)
            .await
            .unwrap();
        sqlx::Row::get::<i64, _>(&row, 0)
    };
    let done0 = done().await;
    let (p0, r0) = store.count_open_runs().await.unwrap();
    // For a profiler to attach to the window (docs/BENCHMARKS.md).
    println!("measuring: window of {secs} s");
    let (cpu0, _) = proc_stats();
    let start = now_ms();
    let api_create = arg("--api-create", 0);
    let creating =
        (api_create > 0).then(|| create_through_api(base.clone(), group.id, api_create, arg("--clients", 8)));
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let end = now_ms();
    let (cpu1, rss) = proc_stats();
    let child_cpu1 = child_pid.map(cpu_seconds).unwrap_or(0.0);
    let done1 = done().await;
    let (p1, r1) = store.count_open_runs().await.unwrap();
    let received: Vec<(i64, i64)> = match (&seen, &mut child) {
        (Some(seen), _) => seen.lock().unwrap().received.clone(),
        (None, Some((c, lines))) => {
            use tokio::io::AsyncWriteExt;
            let stdin = c.stdin.as_mut().unwrap();
            stdin.write_all(b"dump\n").await.unwrap();
            stdin.flush().await.unwrap();
            let _ = lines.next_line().await;
            std::fs::read_to_string(&out_file)
                .unwrap()
                .lines()
                .filter_map(|l| {
                    let (a, b) = l.split_once(' ')?;
                    Some((a.parse().ok()?, b.parse().ok()?))
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let window: Vec<(i64, i64)> = received
        .into_iter()
        .filter(|(_, at)| *at >= start && *at < end)
        .collect();
    // Lateness: scheduled time (from the run rows) to receipt at the executor.
    let mut late = Vec::with_capacity(window.len());
    let mut max_id = 0;
    let mut min_id = i64::MAX;
    for (id, _) in &window {
        max_id = max_id.max(*id);
        min_id = min_id.min(*id);
    }
    let runs = store
        .list_runs(&chime_admin::model::RunFilter {
            before_id: Some(max_id + 1),
            limit: (window.len() as i64) * 2 + 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let sched: std::collections::HashMap<i64, i64> = runs.iter().map(|r| (r.id, r.scheduled_at)).collect();
    for (id, at) in &window {
        if let Some(s) = sched.get(id) {
            late.push(at - s);
        }
    }
    late.sort_unstable();
    let pct = |p: f64| {
        late.get(((late.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or(-1)
    };
    let elapsed = (end - start) as f64 / 1000.0;
    println!(
        "jobs={jobs} spread={spread} link={link} window_s={elapsed:.1} fires={} fires_per_s={:.0} lateness_ms p50={} p99={} max={} \
         admin_cpu_cores={:.2} executor_cpu_cores={:.2} admin_peak_rss_mb={:.0}",
        window.len(),
        window.len() as f64 / elapsed,
        pct(0.5),
        pct(0.99),
        late.last().copied().unwrap_or(-1),
        (cpu1 - cpu0) / elapsed,
        (child_cpu1 - child_cpu0) / elapsed,
        rss as f64 / 1024.0
    );
    if let Some(creating) = creating {
        let (mut lat, wall) = tokio::task::spawn_blocking(move || creating.join().unwrap())
            .await
            .unwrap();
        lat.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            lat.get(((lat.len() as f64 - 1.0) * p) as usize)
                .copied()
                .unwrap_or(-1.0)
        };
        println!(
            "api_created={} api_create_per_s={:.0} api_latency_ms p50={:.1} p99={:.1} max={:.1}",
            lat.len(),
            lat.len() as f64 / wall,
            pct(0.5),
            pct(0.99),
            lat.last().copied().unwrap_or(-1.0)
        );
    }
    let fires = window.len().max(1) as f64;
    println!(
        "admin_cpu_per_fire_us={:.1} above_idle_us={:.1} idle_admin_cores={idle_cores:.3}",
        (cpu1 - cpu0) * 1e6 / fires,
        (cpu1 - cpu0 - idle_cores * elapsed) * 1e6 / fires
    );
    println!(
        "recorded_per_s={:.0} open_runs start={} end={} (pending {p0}→{p1}, running {r0}→{r1}) claims_deferred={}",
        (done1 - done0) as f64 / elapsed,
        p0 + r0,
        p1 + r1,
        admin.admin.metrics.claims_deferred.get()
    );
}
