//! A real `chime admin` process on a database of its own, the console login, and scratch
//! databases on the MariaDB and PostgreSQL servers the tests use.

use super::BIN;
use serde_json::json;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Generous: the tests poll for outcomes and never assert on speed.
const WAIT: Duration = Duration::from_secs(60);

/// The REST API token of the admins [`start_admin`] starts.
pub const API_TOKEN: &str = "chime-cli-test-token";

/// A `chime admin` process on `db`, with its standard error collected; killed when dropped.
pub struct Admin {
    /// The process.
    pub child: Child,
    /// Its base URL.
    pub url: String,
    /// What it printed to standard error so far.
    pub stderr: Arc<Mutex<String>>,
}

impl Drop for Admin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts an admin on `db` with `CHIME_ADMIN_PASSWORD` set to `password`, on a free port (read
/// back from its "listening on" line).
pub fn start_admin(db: &str, password: &str) -> Admin {
    start_admin_with(db, password, &[])
}

/// [`start_admin`] with more flags.
pub fn start_admin_with(db: &str, password: &str, flags: &[&str]) -> Admin {
    let mut child = Command::new(BIN)
        .args(["admin", "--db", db, "--listen", "127.0.0.1:0"])
        .args(flags)
        .env("CHIME_ADMIN_PASSWORD", password)
        .env("CHIME_API_TOKEN", API_TOKEN)
        .env_remove("CHIME_DB")
        .env_remove("CHIME_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let pipe = child.stderr.take().unwrap();
    let sink = stderr.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("chime admin: listening on ") {
                let _ = tx.send(url.to_owned());
            }
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    let url = match rx.recv_timeout(WAIT) {
        Ok(url) => url,
        Err(_) => {
            let _ = child.kill();
            panic!("the admin did not start: {}", stderr.lock().unwrap());
        }
    };
    Admin { child, url, stderr }
}

/// Logs in; the session cookie (`name=value`), or the HTTP status when refused.
pub async fn login(base: &str, user: &str, password: &str) -> Result<String, u16> {
    let resp = reqwest::Client::new()
        .post(format!("{base}/console/api/login"))
        .json(&json!({"username": user, "password": password}))
        .send()
        .await
        .unwrap();
    if resp.status() != 200 {
        return Err(resp.status().as_u16());
    }
    let cookie = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie");
    Ok(cookie.split(';').next().unwrap().to_owned())
}

/// A fresh database on a server (`server` without a database name); dropped at the end.
pub async fn server_db(server: &str, admin_db: &str, create: &str) -> (String, String) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let name = format!("chime_test_{}_{:08x}", std::process::id(), rand_seed());
    let mut conn = sqlx::AnyConnection::connect(&format!("{server}/{admin_db}"))
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test database at {server} ({e})"));
    sqlx::raw_sql(&create.replace("NAME", &name))
        .execute(&mut conn)
        .await
        .unwrap();
    (format!("{server}/{name}"), name)
}

/// Some bits that differ between test processes started in the same second.
pub fn rand_seed() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

pub async fn drop_server_db(server: &str, admin_db: &str, drop_sql: &str) {
    use sqlx::Connection;
    if let Ok(mut conn) = sqlx::AnyConnection::connect(&format!("{server}/{admin_db}")).await {
        let _ = sqlx::raw_sql(drop_sql).execute(&mut conn).await;
    }
}
