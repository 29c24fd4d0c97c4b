//! `chime import xxl-job`: brings an XXL-JOB database into Chime's (see docs/migration.md).
//! Works on Chime's database directly, as `chime admin reset-password` does: users with their
//! password hashes, runs under their own ids and script history are not things the REST API
//! takes, and the import is one transaction.

use chime_admin::address_policy::ExecutorNetworks;
use chime_import::{ImportOptions, MAX_LOG_DAYS};
use chime_protocol::ProtocolGeneration;
use std::process::ExitCode;

/// `chime import …`
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// Where to import from.
    #[command(subcommand)]
    pub source: ImportSource,
}

/// The schedulers Chime imports from.
#[derive(clap::Subcommand, Debug)]
pub enum ImportSource {
    /// An XXL-JOB 2.x or 3.x database: executor groups, jobs (with their GLUE versions),
    /// console users and, with --logs-days, recent runs. Running it again changes nothing;
    /// after edits in XXL-JOB it updates. Exits non-zero when an object could not be imported.
    #[command(name = "xxl-job")]
    XxlJob(XxlJobArgs),
}

/// Arguments of `chime import xxl-job`.
#[derive(clap::Args, Debug)]
pub struct XxlJobArgs {
    /// XXL-JOB's database, mysql://user:password@host:port/xxl_job (read only).
    #[arg(long, env = "CHIME_IMPORT_FROM", hide_env_values = true, value_name = "URL")]
    pub from: String,
    /// Chime's database, as `chime admin --db`.
    #[arg(
        long,
        env = "CHIME_DB",
        default_value = "sqlite://chime.db",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub db: String,
    /// XXL-JOB's time zone (that of its admin's JVM): its times are read, and its cron
    /// expressions fire, in it [default: this machine's].
    #[arg(long, value_name = "ZONE")]
    pub time_zone: Option<String>,
    /// Also import the runs of the last N days (1 to 3650). Runs still waiting for a result
    /// are always imported, so their executors' reports find them.
    #[arg(long, value_name = "N")]
    pub logs_days: Option<u32>,
    /// How Chime calls the imported groups' executors: G2, G3 or G4 [default: what the
    /// schema's XXL-JOB version speaks].
    #[arg(long, value_name = "G")]
    pub protocol: Option<String>,
    /// Import every job stopped, to look around while XXL-JOB still schedules them.
    #[arg(long)]
    pub stopped: bool,
    /// Print the report, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The networks executor addresses may be in, as `chime admin --executor-networks`.
    #[arg(long, env = "CHIME_EXECUTOR_NETWORKS", default_value = "", hide_default_value = true)]
    pub executor_networks: String,
}

/// Runs `chime import`; `json` prints the report as JSON.
pub fn run(args: ImportArgs, json: bool) -> ExitCode {
    let ImportSource::XxlJob(args) = args.source;
    let (options, runtime) = match crate::ready_to_run("chime import xxl-job", crate::Threads::One, options(&args)) {
        Ok(ready) => ready,
        Err(code) => return code,
    };
    let db = args.db.clone();
    let result = runtime.block_on(async move {
        let store = chime_admin::store::Store::connect(&db)
            .await
            .map_err(|e| format!("Chime's database {}: {e}", chime_admin::store::redact_url(&db)))?;
        let report = chime_import::import_xxl_job(&store, &options).await;
        store.close().await;
        report.map_err(|e| e.to_string())
    });
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("chime import xxl-job: {e}");
            return ExitCode::FAILURE;
        }
    };
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => outln!("{s}"),
            Err(e) => eprintln!("chime import xxl-job: {e}"),
        }
    } else {
        out!("{}", report.render());
    }
    if report.errors() > 0 {
        eprintln!(
            "chime import xxl-job: {} object(s) not imported (see the report)",
            report.errors()
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn options(args: &XxlJobArgs) -> Result<ImportOptions, String> {
    let zone_name = args
        .time_zone
        .clone()
        .unwrap_or_else(chime_admin::calendar::local_zone_name);
    let zone = zone_name
        .parse()
        .map_err(|_| format!("--time-zone: unknown zone '{zone_name}' (use an IANA name such as Asia/Shanghai)"))?;
    let protocol = args
        .protocol
        .as_deref()
        .map(|p| p.parse::<ProtocolGeneration>().map_err(|e| format!("--protocol: {e}")))
        .transpose()?;
    if let Some(days) = args.logs_days {
        if !(1..=MAX_LOG_DAYS).contains(&days) {
            return Err(format!("--logs-days must be between 1 and {MAX_LOG_DAYS}"));
        }
    }
    let networks: ExecutorNetworks = args
        .executor_networks
        .parse()
        .map_err(|e| format!("--executor-networks: {e}"))?;
    Ok(ImportOptions {
        from: args.from.clone(),
        zone,
        log_days: args.logs_days,
        protocol,
        stopped: args.stopped,
        dry_run: args.dry_run,
        networks,
    })
}
