//! `chime demo`: the scheduling center on SQLite plus a demo executor in the same process, a
//! demo group and a demo job — the one-line quick start of the README.
//!
//! A restarted demo behaves like the first start: the same REST API token (kept in a file
//! beside the SQLite database), and the demo group's jobs fire only once the demo executor is
//! online, so a restart leaves no run failed for want of an executor.

use chime_admin::store::Store;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The demo executor's app name, which is also its group's.
const DEMO_APP: &str = "chime-demo";

/// How long the demo waits for its executor to register before it gives up on starting the
/// demo jobs (registration normally takes well under a second).
const ONLINE_WAIT: Duration = Duration::from_secs(30);

/// Arguments of `chime demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Database (SQLite by default, created on first start).
    #[arg(long, default_value = "sqlite://chime-demo.db")]
    pub db: String,
    /// Address of the admin (loopback only: the demo uses generated tokens).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Address of the demo executor.
    #[arg(long, default_value = "127.0.0.1:9999")]
    pub executor_listen: String,
    /// Where the demo executor keeps run logs.
    #[arg(long, default_value = "chime-demo-logs")]
    pub logdir: PathBuf,
    /// REST API token [default: generated at the first start and kept in the file
    /// `<database file>.api-token` (mode 0600) beside a SQLite database, so it stays valid
    /// across restarts].
    #[arg(long, env = "CHIME_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// Let the demo executor run script jobs (GLUE_SHELL, GLUE_PYTHON, …): code typed in the
    /// console runs on this host. Off by default, as on `chime executor`; the demo's executor
    /// always has a generated access token, which script jobs require.
    #[arg(long)]
    pub enable_scripts: bool,
}

/// Runs `chime demo`.
pub fn run(args: DemoArgs) -> ExitCode {
    crate::admin_cmd::init_logging();
    let Some(runtime) = crate::start_runtime("chime demo", crate::Threads::PerCore) else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(demo(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chime demo: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn demo(args: DemoArgs) -> Result<(), String> {
    let mut config = chime_admin::AdminConfig::new(args.db.clone());
    config.listen = args
        .listen
        .parse()
        .map_err(|e| format!("--listen '{}': {e}", args.listen))?;
    let api_token = match args.api_token.clone().filter(|t| !t.is_empty()) {
        Some(t) => t,
        None => match token_file(&args.db) {
            Some(path) => stored_token(&path)?,
            None => chime_admin::http::auth::random_password(),
        },
    };
    config.api_token = Some(api_token.clone());
    config.access_token = Some(chime_admin::http::auth::random_password());
    let mut config = config.checked()?;
    if !config.listen.ip().is_loopback() {
        return Err("the demo listens on loopback only; use `chime admin` for anything else".into());
    }
    config.admin_password = std::env::var("CHIME_ADMIN_PASSWORD").ok().filter(|p| !p.is_empty());
    let access_token = config.access_token.clone().unwrap_or_default();

    // Before the scheduler starts: stop the demo group's running jobs, to start them again
    // once the demo executor has registered. Otherwise a job due at start fires into a group
    // with no executor yet, and the run fails ("registry address is empty").
    let paused_file = beside(&args.db, ".paused-jobs");
    let (users_existed, paused) = {
        let store = Store::connect(&args.db).await.map_err(|e| e.to_string())?;
        let outcome = pause_demo_jobs(&store, paused_file.as_deref()).await;
        store.close().await;
        outcome?
    };

    let handle = chime_admin::start(config).await.map_err(|e| e.to_string())?;
    let admin_url = format!("http://{}", handle.local_addr);

    let listen = args
        .executor_listen
        .parse()
        .map_err(|e| format!("--executor-listen '{}': {e}", args.executor_listen))?;
    let builder = chime_executor::Executor::builder()
        .admin_addresses([admin_url.clone()])
        .app_name(DEMO_APP)
        .access_token(access_token)
        .listen(listen)
        .log_dir(args.logdir.clone())
        .enable_scripts(args.enable_scripts);
    let executor = chime_executor::demo::register_demo_handlers(builder)
        .build()
        .map_err(|e| e.to_string())?
        .start()
        .await
        .map_err(|e| e.to_string())?;

    let (group_id, created) = demo_group_and_job(&handle.admin).await?;
    let to_start: Vec<i64> = paused.into_iter().chain(created).collect();
    start_when_online(&handle.admin, group_id, &to_start, paused_file.as_deref()).await?;
    print_welcome(
        &args,
        &admin_url,
        executor.advertised_address(),
        &api_token,
        users_existed,
    );
    let shutdown = handle.admin.shutdown.clone();
    crate::admin_cmd::wait_for_signal().await;
    executor.shutdown().await;
    shutdown.cancel();
    handle.wait().await;
    Ok(())
}

/// The demo group's id (created on the first start), and the id of the demo job when this
/// start created it: stopped, to be started with the paused jobs once the executor is online.
async fn demo_group_and_job(admin: &chime_admin::Admin) -> Result<(i64, Option<i64>), String> {
    let store = &admin.store;
    let group = match store.group_by_app_name(DEMO_APP).await.map_err(|e| e.to_string())? {
        Some(g) => g,
        None => {
            let spec = chime_admin::model::GroupSpec {
                app_name: Some(DEMO_APP.into()),
                title: Some("Demo executor".into()),
                ..Default::default()
            };
            store
                .insert_group(
                    &spec
                        .validate(None, &admin.config.executor_networks)
                        .map_err(|e| e.to_string())?,
                )
                .await
                .map_err(|e| e.to_string())?
        }
    };
    admin.directory.refresh().await.map_err(|e| e.to_string())?;
    let has_jobs = !store
        .list_jobs(Some(group.id), None, 0, 1)
        .await
        .map_err(|e| e.to_string())?
        .is_empty();
    if has_jobs {
        return Ok((group.id, None));
    }
    let spec = chime_admin::model::JobSpec {
        group_id: Some(group.id),
        description: Some("Demo: says hello every 5 seconds".into()),
        schedule: chime_admin::api::SchedulePatch {
            schedule_type: Some("CRON".into()),
            schedule_expr: Some("0/5 * * * * ?".into()),
            ..Default::default()
        },
        task: chime_admin::api::JobTaskPatch {
            handler: Some("demoJobHandler".into()),
            param: Some("hello from chime demo".into()),
            ..Default::default()
        },
        running: Some(false),
        ..Default::default()
    };
    let draft = spec
        .validate(None, &admin.config.default_time_zone, group.id)
        .map_err(|e| e.to_string())?;
    let job = store.insert_job(&draft, "demo").await.map_err(|e| e.to_string())?;
    Ok((group.id, Some(job.id)))
}

/// Starts the jobs `ids` of the demo group once its executor is online (and forgets the
/// record of paused jobs); when it does not come online, says which stay stopped.
async fn start_when_online(
    admin: &chime_admin::Admin,
    group_id: i64,
    ids: &[i64],
    paused_file: Option<&Path>,
) -> Result<(), String> {
    if wait_until_online(admin, group_id).await {
        for id in ids {
            match admin.store.set_job_running(*id, true).await {
                Ok(job) => admin.wake_scheduler_for(&job),
                // Deleted since an earlier start recorded it: nothing to start.
                Err(chime_admin::store::StoreError::NotFound(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        if let Some(path) = paused_file {
            let _ = std::fs::remove_file(path);
        }
    } else if !ids.is_empty() {
        let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
        eprintln!(
            "chime demo: the demo executor did not register within {} s; its jobs stay stopped \
             (start them with `chime job start ID`: {})",
            ONLINE_WAIT.as_secs(),
            ids.join(", ")
        );
    }
    Ok(())
}

/// What `chime demo` prints once it runs: where the admin, the console and the executor are,
/// and how to try the client commands.
fn print_welcome(
    args: &DemoArgs,
    admin_url: &str,
    executor_address: impl std::fmt::Display,
    api_token: &str,
    users_existed: bool,
) {
    let password_hint = if users_existed {
        format!(
            "its password was set at the first start; forgotten: chime admin reset-password admin --db {}",
            args.db
        )
    } else if std::env::var_os("CHIME_ADMIN_PASSWORD").is_some_and(|p| !p.is_empty()) {
        "password from CHIME_ADMIN_PASSWORD".to_owned()
    } else {
        "password printed above, shown once".to_owned()
    };
    outln!("Chime demo running.");
    outln!("  admin:     {admin_url}  (database {})", args.db);
    outln!("  console:   {admin_url}/  (user admin; {password_hint})");
    outln!("  executor:  {} (app name {DEMO_APP})", executor_address);
    outln!("  job:       demoJobHandler every 5 seconds");
    if args.enable_scripts {
        outln!("  scripts:   on (GLUE_SHELL, GLUE_PYTHON, … jobs run on this host)");
    } else {
        outln!("  scripts:   off (script jobs need `chime demo --enable-scripts`)");
    }
    if let Some(path) = token_file(&args.db).filter(|_| args.api_token.is_none()) {
        outln!("  API token: kept in {} (the same at every start)", path.display());
    }
    outln!();
    outln!("Try, in another terminal:");
    outln!("  export CHIME_ADMIN_URL={admin_url} CHIME_API_TOKEN={api_token}");
    outln!("  chime run list        # the demo job's runs");
    outln!("  chime run log <ID>    # a run's log, read from the executor");
    outln!("Stop with Ctrl-C.");
}

/// Whether console users existed, and the ids of the demo group's jobs that were running and
/// are now stopped (to be started again once the demo executor is online). The ids are written
/// to `record` (beside a SQLite database) before any job is stopped and the file is removed
/// once they run again, so a demo stopped in between (Ctrl-C at start) restarts them next time
/// instead of leaving them stopped.
async fn pause_demo_jobs(store: &Store, record: Option<&Path>) -> Result<(bool, Vec<i64>), String> {
    let users_existed = store.count_users().await.map_err(|e| e.to_string())? > 0;
    let Some(group) = store.group_by_app_name(DEMO_APP).await.map_err(|e| e.to_string())? else {
        return Ok((users_existed, Vec::new()));
    };
    let mut paused: Vec<i64> = record.map(read_ids).unwrap_or_default();
    let mut running = Vec::new();
    let mut after = 0;
    loop {
        let page = store
            .list_jobs(Some(group.id), None, after, 500)
            .await
            .map_err(|e| e.to_string())?;
        let Some(last) = page.last().map(|j| j.id) else { break };
        running.extend(page.iter().filter(|j| j.running).map(|j| j.id));
        after = last;
    }
    paused.extend(running.iter().copied());
    paused.sort_unstable();
    paused.dedup();
    if let Some(path) = record.filter(|_| !paused.is_empty()) {
        let text: String = paused.iter().map(|id| format!("{id}\n")).collect();
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    for id in running {
        store.set_job_running(id, false).await.map_err(|e| e.to_string())?;
    }
    Ok((users_existed, paused))
}

/// Most job ids read back from the paused-jobs file (the demo group has a handful of jobs;
/// the bound keeps a wrong file from filling memory).
const MAX_PAUSED: usize = 10_000;

/// The job ids in the paused-jobs file; none when it is missing or unreadable (then only the
/// jobs running now are restarted, as without the file).
fn read_ids(path: &Path) -> Vec<i64> {
    std::fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .filter_map(|l| l.trim().parse::<i64>().ok())
                .filter(|id| *id > 0)
                .take(MAX_PAUSED)
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until the demo group has a live executor address; false after [`ONLINE_WAIT`].
async fn wait_until_online(admin: &chime_admin::Admin, group_id: i64) -> bool {
    let deadline = Instant::now() + ONLINE_WAIT;
    loop {
        if admin.directory.view(group_id).is_some_and(|v| !v.addresses.is_empty()) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Where the demo keeps its API token: `<file>.api-token` beside a SQLite database file;
/// `None` for an in-memory or server database (a new token is then generated at each start).
fn token_file(db: &str) -> Option<PathBuf> {
    beside(db, ".api-token")
}

/// `<file><suffix>` beside a SQLite database file; `None` for other databases.
fn beside(db: &str, suffix: &str) -> Option<PathBuf> {
    let file = crate::admin_cmd::sqlite_file(db)?;
    let mut name = file.file_name()?.to_os_string();
    name.push(suffix);
    Some(file.with_file_name(name))
}

/// Longest token accepted from the token file (generated ones are 20 characters).
const MAX_TOKEN_LEN: usize = 256;

/// The token stored at `path`, or a new one written there (readable by its owner only: it
/// grants the whole REST API).
fn stored_token(path: &Path) -> Result<String, String> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let token = std::str::from_utf8(&bytes).unwrap_or_default().trim();
            if token.len() < 16 || token.len() > MAX_TOKEN_LEN || !token.chars().all(|c| c.is_ascii_graphic()) {
                return Err(format!(
                    "{} does not hold an API token (16 to {MAX_TOKEN_LEN} printable characters); delete it to get a new one",
                    path.display()
                ));
            }
            restrict_to_owner(path)?;
            Ok(token.to_owned())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = chime_admin::http::auth::random_password();
            write_private(path, &token).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            Ok(token)
        }
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Creates `path` with `content`, mode 0600 from the start (never briefly readable by others).
fn write_private(path: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(content.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}

/// Makes an existing token file readable by its owner only (it may have been copied with
/// looser permissions).
fn restrict_to_owner(path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("cannot make {} private: {e}", path.display()))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_lives_beside_a_sqlite_file_only() {
        assert_eq!(
            token_file("sqlite://chime-demo.db"),
            Some(PathBuf::from("chime-demo.db.api-token"))
        );
        assert_eq!(
            token_file("sqlite:///tmp/x/demo.db?mode=rwc"),
            Some(PathBuf::from("/tmp/x/demo.db.api-token"))
        );
        assert_eq!(token_file("sqlite::memory:"), None);
        assert_eq!(token_file("postgres://u@h/db"), None);
    }
}
