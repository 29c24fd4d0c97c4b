//! The client commands when the admin answers 503 (its database was momentarily busy and
//! nothing was changed): the request is sent again after `Retry-After`, a few times, and then
//! the admin's message is shown.
//!
//! A real admin only answers 503 in a lock conflict that cannot be produced on demand, so the
//! other side here is a plain HTTP listener that answers the way the admin does
//! (`http::error` in chime-admin has the test that a real busy database gives this answer).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_chime");

const BUSY: &str =
    r#"{"error":"the database is busy (a lock conflict with the scheduler); nothing was changed, try again"}"#;

/// Serves `POST /v1/groups`: the first `busy` requests get the admin's 503, later ones a
/// created group. Returns the base URL and the count of requests received.
fn admin_busy_for(busy: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            std::io::Read::read_exact(&mut reader, &mut body).unwrap();
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let (status, extra, reply) = if n < busy {
                ("503 Service Unavailable", "Retry-After: 1\r\n", BUSY.to_owned())
            } else {
                let sent: serde_json::Value = serde_json::from_slice(&body).unwrap();
                (
                    "201 Created",
                    "",
                    serde_json::json!({"id": 7, "app_name": sent["app_name"]}).to_string(),
                )
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, seen)
}

fn group_add(url: &str) -> std::process::Output {
    Command::new(BIN)
        .args(["--json", "group", "add", "--appname", "billing", "--title", "Billing"])
        .env("CHIME_ADMIN_URL", url)
        .env("CHIME_API_TOKEN", "t")
        .output()
        .unwrap()
}

#[test]
fn a_busy_admin_is_asked_again() {
    let (url, seen) = admin_busy_for(2);
    let out = group_add(&url);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        3,
        "two busy answers, then the one that succeeded"
    );
    let group: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(group["app_name"], "billing", "the body was sent again unchanged");
}

#[test]
fn a_database_that_stays_busy_ends_with_the_admins_message() {
    let (url, seen) = admin_busy_for(usize::MAX);
    let out = group_add(&url);
    assert!(!out.status.success());
    assert_eq!(seen.load(Ordering::SeqCst), 3, "three attempts, then it gives up");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("database is busy") && stderr.contains("503"),
        "{stderr}"
    );
}
