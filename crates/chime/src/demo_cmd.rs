//! `chime demo`: the scheduling center on SQLite plus a demo executor in the same process, a
//! demo group and a demo job — the one-line quick start of the README.

use std::path::PathBuf;
use std::process::ExitCode;

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
    /// REST API token [default: random, printed].
    #[arg(long, env = "CHIME_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
}

/// Runs `chime demo`.
pub fn run(args: DemoArgs) -> ExitCode {
    crate::admin_cmd::init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("chime demo: {e}");
            return ExitCode::FAILURE;
        }
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
    config.api_token = Some(
        args.api_token
            .clone()
            .unwrap_or_else(chime_admin::http::auth::random_password),
    );
    config.access_token = Some(chime_admin::http::auth::random_password());
    let mut config = config.checked()?;
    if !config.listen.ip().is_loopback() {
        return Err("the demo listens on loopback only; use `chime admin` for anything else".into());
    }
    config.admin_password = std::env::var("CHIME_ADMIN_PASSWORD").ok();
    let api_token = config.api_token.clone().unwrap_or_default();
    let access_token = config.access_token.clone().unwrap_or_default();
    let handle = chime_admin::start(config).await.map_err(|e| e.to_string())?;
    let admin_url = format!("http://{}", handle.local_addr);

    let listen = args
        .executor_listen
        .parse()
        .map_err(|e| format!("--executor-listen '{}': {e}", args.executor_listen))?;
    let builder = chime_executor::Executor::builder()
        .admin_addresses([admin_url.clone()])
        .app_name("chime-demo")
        .access_token(access_token)
        .listen(listen)
        .log_dir(args.logdir.clone());
    let executor = chime_executor::demo::register_demo_handlers(builder)
        .build()
        .map_err(|e| e.to_string())?
        .start()
        .await
        .map_err(|e| e.to_string())?;

    let store = &handle.admin.store;
    let group = match store.group_by_app_name("chime-demo").await.map_err(|e| e.to_string())? {
        Some(g) => g,
        None => {
            let spec = chime_admin::model::GroupSpec {
                app_name: Some("chime-demo".into()),
                title: Some("Demo executor".into()),
                ..Default::default()
            };
            store
                .insert_group(
                    &spec
                        .validate(None, &handle.admin.config.executor_networks)
                        .map_err(|e| e.to_string())?,
                )
                .await
                .map_err(|e| e.to_string())?
        }
    };
    handle.admin.directory.refresh().await.map_err(|e| e.to_string())?;
    if store
        .list_jobs(Some(group.id), None, 0, 1)
        .await
        .map_err(|e| e.to_string())?
        .is_empty()
    {
        let spec = chime_admin::model::JobSpec {
            group_id: Some(group.id),
            description: Some("Demo: says hello every 5 seconds".into()),
            schedule_type: Some("CRON".into()),
            schedule_expr: Some("0/5 * * * * ?".into()),
            handler: Some("demoJobHandler".into()),
            param: Some("hello from chime demo".into()),
            running: Some(true),
            ..Default::default()
        };
        let draft = spec
            .validate(None, &handle.admin.config.default_time_zone, group.id)
            .map_err(|e| e.to_string())?;
        store.insert_job(&draft, "demo").await.map_err(|e| e.to_string())?;
        handle.admin.wake_scheduler();
    }
    outln!("Chime demo running.");
    outln!("  admin:     {admin_url}  (database {})", args.db);
    outln!("  console:   {admin_url}/  (user admin; its password is printed above at the first start, or set by CHIME_ADMIN_PASSWORD then)");
    outln!("  executor:  {} (app name chime-demo)", executor.advertised_address());
    outln!("  job:       demoJobHandler every 5 seconds");
    outln!();
    outln!("Try, in another terminal:");
    outln!("  export CHIME_ADMIN_URL={admin_url} CHIME_API_TOKEN={api_token}");
    outln!("  chime run list        # the demo job's runs");
    outln!("  chime run log <ID>    # a run's log, read from the executor");
    outln!("Stop with Ctrl-C.");
    let shutdown = handle.admin.shutdown.clone();
    crate::admin_cmd::wait_for_signal().await;
    executor.shutdown().await;
    shutdown.cancel();
    handle.wait().await;
    Ok(())
}
