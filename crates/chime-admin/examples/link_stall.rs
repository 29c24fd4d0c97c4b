//! What stalled executor links cost a running admin: opens `--links` links to a `chime admin`
//! (as any executor with the token could), sends on each most of one large message — a frame
//! announcing `--announce` bytes, of which `--send` are sent — and then stalls; reports the
//! admin's resident memory (from `/proc/<pid>/status`) before, at its highest while the links
//! hold their bytes, and after they are closed, and how many links the admin closed itself.
//!
//! ```text
//! chime admin --db sqlite:///tmp/stall.db --access-token T &
//! cargo run -p chime-admin --example link_stall -- --admin 127.0.0.1:8080 --pid $! --token T
//! ```

use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(clap::Parser)]
struct Args {
    /// The admin's address, host:port.
    #[arg(long)]
    admin: String,
    /// The admin's process id, to read its memory.
    #[arg(long)]
    pid: u32,
    /// The admin's access token.
    #[arg(long)]
    token: String,
    /// Links opened.
    #[arg(long, default_value_t = 20)]
    links: usize,
    /// Size announced by each link's one frame.
    #[arg(long, default_value_t = 17 * 1024 * 1024 - 4096)]
    announce: u64,
    /// Bytes of it each link sends before it stalls.
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    send: usize,
}

/// The admin's resident memory, in MiB.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Opens one link (the upgrade, by hand) as executor `id`.
async fn open(admin: &str, token: &str, id: &str) -> TcpStream {
    let mut stream = TcpStream::connect(admin).await.expect("connect");
    let request = format!(
        "GET /api/link HTTP/1.1\r\nHost: {admin}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         XXL-JOB-APPNAME: stall\r\nChime-Executor-Id: {id}\r\nXXL-JOB-ACCESS-TOKEN: {token}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).await.expect("an answer to the upgrade");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "the upgrade was refused: {head}");
    stream
}

/// Sends the head of one masked text frame of `len` bytes (mask 0: the payload goes as is),
/// then `send` bytes of it; `false` if the admin closed the connection meanwhile.
async fn send_most(stream: &mut TcpStream, len: u64, send: usize) -> bool {
    let mut head = vec![0x81u8, 0x80 | 127];
    head.extend_from_slice(&len.to_be_bytes());
    head.extend_from_slice(&[0, 0, 0, 0]);
    if stream.write_all(&head).await.is_err() {
        return false;
    }
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0;
    while sent < send {
        let n = chunk.len().min(send - sent);
        if stream.write_all(&chunk[..n]).await.is_err() {
            return false;
        }
        sent += n;
    }
    true
}

#[tokio::main]
async fn main() {
    let args = <Args as clap::Parser>::parse();
    let before = rss_mib(args.pid);
    let mut streams = Vec::new();
    for i in 0..args.links {
        streams.push(open(&args.admin, &args.token, &format!("stall-{i}")).await);
    }
    let peak = std::sync::Arc::new(std::sync::Mutex::new(before));
    let sampler = {
        let peak = peak.clone();
        let pid = args.pid;
        tokio::spawn(async move {
            loop {
                let now = rss_mib(pid);
                {
                    let mut p = peak.lock().unwrap();
                    *p = p.max(now);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let started = Instant::now();
    let mut sending = Vec::new();
    for mut stream in streams {
        let (len, send) = (args.announce, args.send);
        sending.push(tokio::spawn(async move {
            let held = send_most(&mut stream, len, send).await;
            (stream, held)
        }));
    }
    let mut held = Vec::new();
    let mut closed = 0;
    for task in sending {
        let (stream, ok) = task.await.unwrap();
        if ok {
            held.push(stream);
        } else {
            closed += 1;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let holding = rss_mib(args.pid);
    sampler.abort();
    let peak = *peak.lock().unwrap();
    drop(held);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = rss_mib(args.pid);
    println!(
        "{} links, each {} of a {} byte message: {} closed by the admin while sending; admin RSS \
         {before:.1} MiB before, {peak:.1} MiB at most, {holding:.1} MiB while they stalled, {after:.1} MiB 3 s after \
         they closed ({:.1} s to send)",
        args.links,
        args.send,
        args.announce,
        closed,
        started.elapsed().as_secs_f64()
    );
}
