//! Moving from XXL-JOB to Chime: `chime import xxl-job` reads an XXL-JOB 2.x or 3.x database
//! and writes its executor groups, jobs (with their script versions), console users and,
//! optionally, recent runs into Chime's, in one transaction, with a report per object.
//!
//! * `source.rs` reads XXL-JOB's database (MySQL) and tells its version from its columns;
//! * `convert.rs` turns the rows into Chime's import, without I/O, leaving out with a reason
//!   what Chime cannot take;
//! * `chime_admin::store` writes it (`Store::import`), matched by key (`xxl-<id>`) so a second
//!   import changes nothing and an import after edits in XXL-JOB updates;
//! * `report.rs` says what happened.

mod convert;
mod report;
mod source;

pub use convert::{epoch_ms, job_key, protocol_of, trigger_type_of};
pub use report::{Entry, Kind, Report, RunSummary};
pub use source::Version;

use chime_admin::address_policy::ExecutorNetworks;
use chime_admin::store::{redact_url, ApplyOptions, Store, StoreError};
use chime_protocol::ProtocolGeneration;
use chrono_tz::Tz;

/// Most days of run history one import reads.
pub const MAX_LOG_DAYS: u32 = 3_650;

/// Why an import could not be done at all (objects it cannot take are in the [`Report`]).
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The XXL-JOB database could not be read.
    #[error("XXL-JOB database: {0}")]
    Source(String),
    /// Chime's database refused the import (nothing was written).
    #[error("Chime's database: {0}")]
    Store(#[from] StoreError),
    /// An option is out of range.
    #[error("{0}")]
    Invalid(String),
}

impl From<sqlx::Error> for ImportError {
    fn from(e: sqlx::Error) -> ImportError {
        ImportError::Source(e.to_string())
    }
}

/// What to import, and how.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The XXL-JOB database, `mysql://user:password@host:port/xxl_job`.
    pub from: String,
    /// XXL-JOB's zone (its admin JVM's): its times are wall times there and its cron
    /// expressions fire there.
    pub zone: Tz,
    /// Import the runs of the last this many days (runs still waiting for a result are always
    /// imported: their executors will report to Chime).
    pub log_days: Option<u32>,
    /// How Chime calls the groups' executors; `None`: as the schema's version does.
    pub protocol: Option<ProtocolGeneration>,
    /// Import every job stopped.
    pub stopped: bool,
    /// Work out and report everything, write nothing.
    pub dry_run: bool,
    /// The admin's `--executor-networks`, for manual addresses.
    pub networks: ExecutorNetworks,
}

/// Who the audit log and the script versions name as the author of an import.
pub const AUTHOR: &str = "xxl-job import";

/// Imports the XXL-JOB database `options.from` into `store`.
pub async fn import_xxl_job(store: &Store, options: &ImportOptions) -> Result<Report, ImportError> {
    let since = match options.log_days {
        None => None,
        Some(days) if (1..=MAX_LOG_DAYS).contains(&days) => {
            let from = chrono::Utc::now() - chrono::Duration::days(i64::from(days));
            Some(
                from.with_timezone(&options.zone)
                    .format("%Y-%m-%d %H:%M:%S")
                    .to_string(),
            )
        }
        Some(_) => {
            return Err(ImportError::Invalid(format!(
                "--logs-days must be between 1 and {MAX_LOG_DAYS}"
            )))
        }
    };
    let pool = source::connect(&options.from).await?;
    let version = source::detect(&pool).await?;
    let read = source::read(&pool, version, &source::LogSelection { since }).await;
    pool.close().await;
    let read = read?;
    let zone_name = options.zone.name();
    let opts = ApplyOptions {
        networks: &options.networks,
        default_zone: zone_name,
        author: AUTHOR,
        dry_run: options.dry_run,
        prune: false,
    };
    let rules = convert::Rules {
        zone: options.zone,
        protocol: options.protocol,
        stopped: options.stopped,
        networks: &options.networks,
    };
    let converted = convert::convert(&read, &rules, &opts);
    let source = redact_url(&options.from);
    let outcome = store.import(&converted.bundle, &source, opts).await?;
    Ok(Report::build(
        source,
        version,
        options.zone,
        &converted.bundle.document,
        converted.entries,
        converted.notes,
        &outcome,
    ))
}
