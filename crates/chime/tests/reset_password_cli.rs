//! `chime admin reset-password` as an operator who forgot the console password runs it, on
//! SQLite, MariaDB and PostgreSQL: against the database of a running admin it sets the new
//! password (read from standard input, or generated and printed once), ends the user's
//! sessions, refuses an unknown user and a too short password; and an admin restarted with
//! `CHIME_ADMIN_PASSWORD` says that the variable is ignored because users exist.

use serde_json::json;
use std::io::{BufRead, Write};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_chime");

/// Generous: the test polls for outcomes and never asserts on speed.
const WAIT: Duration = Duration::from_secs(60);

/// A `chime admin` process on `db`, with its standard error collected; killed when dropped.
struct Admin {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Admin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts an admin on `db` with `CHIME_ADMIN_PASSWORD` set to `password`, on a free port (read
/// back from its "listening on" line).
fn start_admin(db: &str, password: &str) -> Admin {
    let mut child = Command::new(BIN)
        .args(["admin", "--db", db, "--listen", "127.0.0.1:0"])
        .env("CHIME_ADMIN_PASSWORD", password)
        .env("CHIME_API_TOKEN", "reset-password-test-token")
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

/// `chime admin reset-password ARGS` with `stdin` on its standard input.
fn reset(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .args(["admin", "reset-password"])
        .args(args)
        .env_remove("CHIME_DB")
        .env_remove("CHIME_CONFIG")
        .env_remove("CHIME_ADMIN_PASSWORD")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// Logs in; the session cookie (`name=value`), or the HTTP status when refused.
async fn login(base: &str, user: &str, password: &str) -> Result<String, u16> {
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

/// Status of `GET /console/api/me` with `cookie`.
async fn me(base: &str, cookie: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{base}/console/api/me"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The whole story on the database at `db` (already created, empty).
async fn reset_password_story(db: &str) {
    let first = start_admin(db, "first-password-1");
    let cookie = login(&first.url, "admin", "first-password-1").await.unwrap();
    assert_eq!(me(&first.url, &cookie).await, 200);
    assert!(
        !first.stderr.lock().unwrap().contains("CHIME_ADMIN_PASSWORD is ignored"),
        "at the first start the variable is used: {}",
        first.stderr.lock().unwrap()
    );

    // From standard input, while the admin runs: the session of the old password ends.
    let out = reset(&["admin", "--db", db, "--password-stdin"], Some("second-password-2\n"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        out.stdout.is_empty(),
        "nothing printed for a chosen password: {}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("1 session(s) ended"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(me(&first.url, &cookie).await, 401, "the old session ended");
    assert_eq!(login(&first.url, "admin", "first-password-1").await, Err(401));
    let cookie = login(&first.url, "admin", "second-password-2").await.unwrap();
    assert_eq!(me(&first.url, &cookie).await, 200);

    // Generated: printed once, alone on standard output.
    let out = reset(&["admin", "--db", db], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let generated = text(&out.stdout).trim_end().to_owned();
    assert!(
        generated.len() >= 16 && !generated.contains(char::is_whitespace),
        "{generated:?}"
    );
    assert_eq!(me(&first.url, &cookie).await, 401);
    login(&first.url, "admin", &generated).await.unwrap();

    // Refusals change nothing.
    let out = reset(&["nobody", "--db", db], None);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("no console user 'nobody'") && err.contains("admin"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no password printed for a refused reset");
    if let Some(file) = db.strip_prefix("sqlite://") {
        let typo = format!("sqlite://{file}.typo");
        let out = reset(&["admin", "--db", &typo], None);
        assert!(!out.status.success());
        assert!(text(&out.stderr).contains("no database at"), "{}", text(&out.stderr));
        assert!(
            !std::path::Path::new(&format!("{file}.typo")).exists(),
            "no empty database left behind"
        );
    }
    let out = reset(&["admin", "--db", db, "--password-stdin"], Some("short\n"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("8 to 256 characters"),
        "{}",
        text(&out.stderr)
    );
    login(&first.url, "admin", &generated).await.unwrap();
    drop(first);

    // A restart with the variable set: it is ignored, and the admin says so.
    let second = start_admin(db, "third-password-3");
    let log = second.stderr.lock().unwrap().clone();
    assert!(
        log.contains("CHIME_ADMIN_PASSWORD is ignored") && log.contains("chime admin reset-password"),
        "{log}"
    );
    assert_eq!(login(&second.url, "admin", "third-password-3").await, Err(401));
    login(&second.url, "admin", &generated).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_password_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("chime-reset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = format!("sqlite://{}/reset.db", dir.display());
    reset_password_story(&db).await;

    // The database may also come from `chime admin`'s settings file or CHIME_DB.
    let config = dir.join("admin.toml");
    std::fs::write(&config, format!("db = \"{db}\"\n")).unwrap();
    let out = reset(
        &["admin", "--config", config.to_str().unwrap(), "--password-stdin"],
        Some("from-the-config-file\n"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let admin = start_admin(&db, "");
    login(&admin.url, "admin", "from-the-config-file").await.unwrap();
    drop(admin);
    let mut child = Command::new(BIN)
        .args(["admin", "reset-password", "admin", "--password-stdin"])
        .env("CHIME_DB", &db)
        .env_remove("CHIME_CONFIG")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from-the-environment\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let admin = start_admin(&db, "");
    login(&admin.url, "admin", "from-the-environment").await.unwrap();
    drop(admin);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh database on a server (`server` without a database name); dropped at the end.
async fn server_db(server: &str, admin_db: &str, create: &str) -> (String, String) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let name = format!("chime_reset_{}_{:08x}", std::process::id(), rand_seed());
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
fn rand_seed() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

async fn drop_server_db(server: &str, admin_db: &str, drop_sql: &str) {
    use sqlx::Connection;
    if let Ok(mut conn) = sqlx::AnyConnection::connect(&format!("{server}/{admin_db}")).await {
        let _ = sqlx::raw_sql(drop_sql).execute(&mut conn).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_password_on_mariadb() {
    let server = std::env::var("CHIME_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".to_owned());
    let (url, name) = server_db(&server, "mysql", "CREATE DATABASE NAME CHARACTER SET utf8mb4").await;
    reset_password_story(&url).await;
    drop_server_db(&server, "mysql", &format!("DROP DATABASE IF EXISTS {name}")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_password_on_postgres() {
    let server =
        std::env::var("CHIME_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned());
    let (url, name) = server_db(&server, "postgres", "CREATE DATABASE NAME").await;
    reset_password_story(&url).await;
    drop_server_db(
        &server,
        "postgres",
        &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
    )
    .await;
}
