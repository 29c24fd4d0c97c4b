//! What peers that stall can hold, against real `chime admin` and `chime executor` processes
//! over real sockets: connections that send nothing, connections that send their request head a
//! byte at a time and never finish it, and requests whose body stops halfway.
//!
//! - `admin_outlives_a_flood_of_stalled_connections`: the admin runs with a limit of 256 open
//!   files (as `prlimit --nofile=256` would start it), and 300 such connections are opened — more
//!   than its descriptors. Before connections were capped and timed, the admin stopped accepting
//!   (out of descriptors) and `/healthz` did not answer while they stayed. Now `/healthz` answers,
//!   and the server closes every stalled connection itself.
//! - `executor_outlives_a_flood_of_stalled_connections`: the same against an executor's HTTP
//!   server with `--max-connections 20`: `/beat` answers, and every stalled connection is closed.
//! - `links_and_long_requests_are_not_cut`: with HTTP timeouts of 1 s, an executor link (a
//!   WebSocket upgrade on the same port) stays up for several times that, and a request whose
//!   large body takes longer than the timeouts to arrive (but never stalls) is answered.

mod common;

use common::linked::{AdminProcess, LinkedExecutor};
use common::process::{free_port, OwnedProcess};
use common::{Db, TestDb, ACCESS_TOKEN, API_TOKEN};
use serde_json::json;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

/// How long the test waits for the server to close all stalled connections: a guard against a
/// hang, far above the 1 s and 2 s timeouts the servers are given.
const CLOSE_WAIT: Duration = Duration::from_secs(90);

/// The three kinds of stalled peer.
#[derive(Clone, Copy, Debug)]
enum Stall {
    /// Connects and sends nothing.
    Silent,
    /// Sends a request head one byte at a time, 5 a second, never ending it.
    Slowloris,
    /// Sends a whole head announcing a body of 1,000 bytes, then 10 of them, then nothing.
    HalfBody,
}

/// Opens one connection to `addr` that stalls as `kind` says; resolves once the server closed it
/// (end of stream or reset), `Err` if it had not within [`CLOSE_WAIT`].
async fn stall(addr: SocketAddr, kind: Stall) -> Result<(), String> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("{kind:?}: connect: {e}"))?;
    let closed = async {
        match kind {
            Stall::Silent => {}
            Stall::HalfBody => {
                let head = "POST /api/callback HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[{\"logId\":";
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
            }
            Stall::Slowloris => {
                let head = b"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Slow: ";
                let mut bytes = head.iter().copied().chain(std::iter::repeat(b'a'));
                loop {
                    let byte = [bytes.next().unwrap()];
                    if stream.write_all(&byte).await.is_err() {
                        return;
                    }
                    let mut buf = [0u8; 64];
                    tokio::select! {
                        read = stream.read(&mut buf) => if !matches!(read, Ok(n) if n > 0) { return },
                        () = tokio::time::sleep(Duration::from_millis(200)) => {}
                    }
                }
            }
        }
        // Until the server ends the connection (anything it answers first is read and dropped).
        let mut buf = [0u8; 1024];
        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    tokio::time::timeout(CLOSE_WAIT, closed)
        .await
        .map_err(|_| format!("a {kind:?} connection was still open after {CLOSE_WAIT:?}"))
}

/// Opens `per_kind` connections of each kind to `addr`, each in its own task.
fn flood(addr: SocketAddr, per_kind: usize) -> JoinSet<Result<(), String>> {
    let mut set = JoinSet::new();
    for _ in 0..per_kind {
        for kind in [Stall::Silent, Stall::Slowloris, Stall::HalfBody] {
            set.spawn(stall(addr, kind));
        }
    }
    set
}

/// Waits for every connection of `set` and fails with the first that the server left open.
async fn all_closed_by_the_server(mut set: JoinSet<Result<(), String>>) {
    let mut open = Vec::new();
    while let Some(done) = set.join_next().await {
        if let Err(e) = done.unwrap() {
            open.push(e);
        }
    }
    assert!(
        open.is_empty(),
        "{} connections were not closed: {}",
        open.len(),
        open[0]
    );
}

/// Starts `chime admin` on SQLite at `addr` allowed `open_files` descriptors (soft and hard, so
/// it cannot raise them), with the given HTTP timeouts.
fn admin_with_descriptors(db: &str, addr: SocketAddr, open_files: u64, dir: &Path) -> OwnedProcess {
    let mut command = Command::new(common::chime_binary());
    command
        .args(["admin", "--db", db, "--listen", &addr.to_string()])
        .args(["--http-header-timeout", "1s", "--http-idle-timeout", "2s"])
        .env("CHIME_API_TOKEN", API_TOKEN)
        .env("CHIME_ACCESS_TOKEN", ACCESS_TOKEN)
        .env("CHIME_ADMIN_PASSWORD", "connection-limits-test")
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info,sqlx=warn");
    // SAFETY: setrlimit(2) only, in the forked child before exec: async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: open_files,
                rlim_max: open_files,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    OwnedProcess::spawn("chime admin", &mut command, Some(&dir.join("admin.log")))
}

/// Waits (at most 60 s) until `url` answers 200 to a GET.
async fn wait_ok(url: &str) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    common::eventually(60, url, || async {
        match http.get(url).send().await {
            Ok(r) if r.status() == 200 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admin_outlives_a_flood_of_stalled_connections() {
    let db = TestDb::new(Db::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let _admin = admin_with_descriptors(&db.url, addr, 256, dir.path());
    let healthz = format!("http://{addr}/healthz");
    wait_ok(&healthz).await;

    // 300 stalled connections: more than the admin has descriptors.
    let flood = flood(addr, 100);
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A fresh client, so the check makes its own connection behind the flood's.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let answer = http.get(&healthz).send().await;
    assert!(
        answer.as_ref().is_ok_and(|r| r.status() == 200),
        "/healthz did not answer under the flood: {answer:?}"
    );
    all_closed_by_the_server(flood).await;
    wait_ok(&healthz).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn executor_outlives_a_flood_of_stalled_connections() {
    let dir = tempfile::tempdir().unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut command = Command::new(common::chime_binary());
    command
        .args(["executor", "--listen", &addr.to_string(), "--token", ACCESS_TOKEN])
        // No admin to register with: only its HTTP server is under test.
        .args(["--admin", "", "--demo-handlers"])
        .args(["--http-header-timeout-secs", "1", "--http-idle-timeout-secs", "2"])
        .args(["--max-connections", "20"])
        .arg("--logdir")
        .arg(dir.path().join("runs"))
        .env("NO_COLOR", "1");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CHIME_") {
            command.env_remove(key);
        }
    }
    let _executor = OwnedProcess::spawn("chime executor", &mut command, Some(&dir.path().join("executor.log")));
    let beat = format!("http://{addr}/beat");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let beat_answers = || async {
        http.post(&beat)
            .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
            .json(&json!({}))
            .send()
            .await
            .ok()
            .filter(|r| r.status() == 200)
    };
    common::eventually(60, "the executor to answer /beat", || async {
        beat_answers().await.map(|_| ()).ok_or_else(|| "no answer".to_owned())
    })
    .await;

    // 60 stalled connections, three times the cap.
    let flood = flood(addr, 20);
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A new client: its connection queues behind the flood's.
    let fresh = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let answer = fresh
        .post(&beat)
        .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
        .json(&json!({}))
        .send()
        .await;
    assert!(
        answer.as_ref().is_ok_and(|r| r.status() == 200),
        "/beat did not answer under the flood: {answer:?}"
    );
    all_closed_by_the_server(flood).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn links_and_long_requests_are_not_cut() {
    let db = TestDb::new(Db::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let admin = AdminProcess::start(
        &db.url,
        addr,
        "admin-limits",
        dir.path(),
        &["--http-header-timeout", "1s", "--http-idle-timeout", "1s"],
    )
    .await;
    let api = admin.api();
    api.ok("/v1/groups", json!({"app_name": "lim", "title": "limits"}))
        .await;
    let executor = LinkedExecutor::start(&[admin.base()], "lim", "l1", None);
    common::linked::wait_linked(&api, "lim", &["l1"]).await;

    // A body of 4 MiB sent in 64 KiB pieces every 50 ms: over 3 s in all, never 1 s silent.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let filler = "x".repeat(4 * 1024 * 1024);
    let body = format!(r#"[{{"logId":999999,"logDateTim":0,"handleCode":200,"handleMsg":"{filler}"}}]"#);
    let head = format!(
        "POST /api/callback HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nXXL-JOB-ACCESS-TOKEN: {ACCESS_TOKEN}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    for piece in body.as_bytes().chunks(64 * 1024) {
        stream.write_all(piece).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut answer = vec![0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // The link has outlived its HTTP timeouts several times over, on its first connection.
    let linked = admin
        .output()
        .lines()
        .filter(|l| l.contains("executor linked") && l.contains("executor=l1 "))
        .count();
    assert_eq!(
        linked,
        1,
        "the link was cut and dialed again:\n{}",
        executor.output_tail()
    );
    common::linked::wait_linked(&api, "lim", &["l1"]).await;
}
