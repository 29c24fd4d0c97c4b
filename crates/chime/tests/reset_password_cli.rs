//! `chime admin reset-password` as an operator who forgot the console password runs it, on
//! SQLite, MariaDB and PostgreSQL: against the database of a running admin it sets the new
//! password (read from standard input, or generated and printed once), ends the user's
//! sessions, refuses an unknown user and a too short password; and an admin restarted with
//! `CHIME_ADMIN_PASSWORD` says that the variable is ignored because users exist.

mod common;
use common::admin::{drop_server_db, login, server_db, start_admin};
use common::BIN;
use std::io::Write;
use std::process::{Command, Output, Stdio};

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
