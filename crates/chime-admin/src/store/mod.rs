//! Database access: the only module that writes SQL.
//!
//! One logical schema, three dialects (`migrations/{sqlite,mysql,postgres}`), reached through
//! `sqlx::Any` so every query is written once (see `docs/admin.md` for why `Any` and not
//! per-backend generic code). Methods are named for what they mean in the life of a fire
//! (`claim_due_fires`, `record_outcomes`), so the scheduler reads like the design, not like SQL.
//!
//! SQLite allows one writer at a time; a second connection that upgrades a read transaction to
//! a write fails with `SQLITE_BUSY` instead of waiting. So on SQLite every writing transaction
//! goes through a one-connection `write` pool, and reads use their own pool. On MySQL and
//! PostgreSQL both are the same pool.

mod alarm_channels;
pub use alarm_channels::StoredChannel;
mod alarm_deliveries;
mod alarm_events;
pub use alarm_deliveries::{AlarmClaim, LeasedDelivery, NewDelivery, Recovered};
mod alarm_silences;
pub use alarm_silences::StoredSilence;
mod alarms;
mod api_keys;
pub use api_keys::{KeyMaker, KeyUse, StoredKey};
mod apply;
mod apply_calendars;
mod apply_channels;
mod apply_workflows;
mod audit;
mod backfills;
pub use backfills::{ActiveBackfill, BackfillTarget, NewBackfill};
mod backup;
mod plan_fields;
pub use backup::dump_advice;
mod bulk;
mod calendars;
pub use calendars::{CalendarChange, CalendarWrite};
mod console_queries;
mod deadlocks;
pub use deadlocks::retry_deadlocked;
mod dialect;
mod event_alarms;
pub use event_alarms::{GroupIncident, NewAlarmEvent};
mod filter;
mod fixed_delays;
mod groups;
mod import;
mod job_columns;
mod job_inserts;
mod jobs;
mod leases;
mod limits;
mod login_states;
mod nodes;
pub use nodes::LiveAdmin;
mod pauses;
pub use pauses::Paused;
mod registry;
mod retention;
mod rounds;
mod rows;
mod run_logs;
mod runs;
mod secrets;
pub use secrets::{KeptSecret, CLUSTER_SECRET, EXECUTOR_ACCESS_TOKEN};
mod sessions;
mod sqlite_ids;
mod users;
mod workflow_instances;
mod workflow_rows;
mod workflow_steps;
mod workflows;

pub use crate::run::{Claimed, FirePlan, Recorded, RunPayload, HANDLE_MSG_MAX, PARTITIONS};
pub use crate::run::{HandleOutcome, MarkedRun, NewRun, RunTicket, SendMark, TriggerOutcome, UnfinishedRun};
pub use alarms::alarm_status;
pub use apply::check_document;
pub use apply::{ApplyOptions, ApplyPlan, DocGroup, DocJob, JobsDocument, PlanEntry, MAX_DOC_GROUPS, MAX_DOC_JOBS};
pub use apply_workflows::{DocNode, DocWorkflow};
pub use audit::{AuditEntry, AuditFilter, NewAuditEntry};
pub use console_queries::{DayCounts, GlueVersion};
pub use dialect::{placeholders, Backend};
pub use import::{
    ImportBundle, ImportOutcome, Imported, ImportedGlueVersion, ImportedRun, ImportedUser, JobHistory, RunCounts,
};
pub use jobs::{JobDue, JobQuery, JobSort};
pub use leases::{Lease, LeaseTable};
pub use limits::{LimitUsage, StoredLimit};
pub use login_states::{LoginState, MAX_PENDING_LOGINS};
pub use run_logs::{LogTarget, StoredLog};
pub use runs::{QueueEntry, QueuedRun, Slots, ADMITTED_EXPIRY_MS};
pub use sessions::SessionUser;
pub use users::User;
pub use workflow_steps::{Advanced, NodeTickets, ADVANCE_BATCH};
pub use workflows::{NodeChange, StoppedInstance};

use crate::model::Invalid;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyConnection, AnyPool, Executor};
use std::str::FromStr;
use std::time::Duration;

/// A store operation that did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed or refused.
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    /// Migrations could not be applied.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The input refers to something that does not exist or breaks a rule.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The thing asked for does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The change conflicts with existing data.
    #[error("{0}")]
    Conflict(String),
    /// The database URL is not one Chime can use.
    #[error("{0}")]
    Url(String),
}

impl StoreError {
    /// A failed write as its caller reports it: a unique-index violation becomes `taken()`,
    /// any other failure stays a database error. Each table keeps one name or key unique, so
    /// the caller knows what the clash means and says it in the user's terms (409 or 422).
    fn unique_violation_as(e: sqlx::Error, taken: impl FnOnce() -> StoreError) -> StoreError {
        match &e {
            sqlx::Error::Database(db) if db.is_unique_violation() => taken(),
            _ => e.into(),
        }
    }

    /// A failure that says nothing about the request and goes away when it is tried again: a
    /// deadlock or serialization failure (the database rolled the transaction back), a lock
    /// wait that timed out, a busy SQLite file, no free connection in time.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Db(sqlx::Error::PoolTimedOut) => true,
            StoreError::Db(sqlx::Error::Database(e)) => {
                // SQLSTATE 40001: MySQL/MariaDB deadlock (1213), PostgreSQL serialization
                // failure; 40P01: PostgreSQL deadlock; SQLite reports its result code
                // (5 BUSY, 6 LOCKED and their extended forms). MySQL's lock wait timeout (1205)
                // has only the generic SQLSTATE HY000, so its message tells it.
                matches!(
                    e.code().as_deref(),
                    Some("40001" | "40P01" | "5" | "6" | "261" | "262" | "517")
                ) || e.message().contains("Lock wait timeout exceeded")
            }
            _ => false,
        }
    }

    /// A failure to reach the database at all: the network, a pool closed or out of time, a
    /// connection the server ended or refused (SQLSTATE class 08, PostgreSQL's 57P0x: shutting
    /// down, starting up). While it lasts the admin cannot record what executors tell it, so
    /// the directory's up-clock stops (`registry::clock`); a statement the database answered
    /// with an error (a row it could not decode, a constraint) says the database is there.
    pub fn is_unreachable(&self) -> bool {
        match self {
            StoreError::Db(
                sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::Protocol(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed,
            ) => true,
            StoreError::Db(sqlx::Error::Database(e)) => e
                .code()
                .is_some_and(|code| code.starts_with("08") || code.starts_with("57P0")),
            _ => false,
        }
    }
}

/// Result of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// The scheduling center's database.
#[derive(Clone, Debug)]
pub struct Store {
    backend: Backend,
    read: AnyPool,
    write: AnyPool,
    /// Creates waiting to be committed together (`job_inserts.rs`).
    pending_inserts: std::sync::Arc<job_inserts::PendingInserts>,
    /// Audit entries waiting to be committed together.
    pending_audit: std::sync::Arc<audit::PendingAudit>,
}

/// Whether the MySQL-protocol server behind `conn` is MariaDB (which has
/// `idle_transaction_timeout`; MySQL has not).
async fn is_mariadb(conn: &mut sqlx::AnyConnection) -> Result<bool, sqlx::Error> {
    let row = sqlx::query("SELECT VERSION()").fetch_one(&mut *conn).await?;
    Ok(rows::text(&row, 0)?.contains("MariaDB"))
}

/// How long PostgreSQL and MariaDB let a transaction wait for its client's next statement
/// before ending it: the default partition lease time. No transaction of the admin waits
/// between its statements for anything but its own CPU, so a client this slow has stopped, and
/// the partitions it held have been taken over by then (see `Store::connect`).
pub const HELD_TRANSACTION_LIMIT: Duration = Duration::from_secs(2);

/// Connections of an admin's pool on a server database.
const SERVER_CONNECTIONS: u32 = 16;

/// Connections of the partition leases' own pool (see [`Store::lease_store`]).
const LEASE_CONNECTIONS: u32 = 2;

static MIGRATE_SQLITE: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static MIGRATE_MYSQL: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/mysql");
static MIGRATE_POSTGRES: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

impl Store {
    /// Connects to `url` (`sqlite://file.db`, `mysql://…`, `postgres://…`), creating a SQLite
    /// file on first use, and applies the embedded migrations.
    pub async fn connect(url: &str) -> StoreResult<Store> {
        let store = Store::connect_as_it_is(url).await?;
        let migrator = match store.backend {
            Backend::Sqlite => &MIGRATE_SQLITE,
            Backend::MySql => &MIGRATE_MYSQL,
            Backend::Postgres => &MIGRATE_POSTGRES,
        };
        migrator.run(&store.write).await?;
        Ok(store)
    }

    /// Connects to `url` without migrating: for copying a database (`backup_to`) that an admin
    /// of another release may be running on, whose schema is that admin's to change.
    pub async fn connect_as_it_is(url: &str) -> StoreResult<Store> {
        sqlx::any::install_default_drivers();
        let backend = Backend::from_url(url).ok_or_else(|| {
            StoreError::Url(format!(
                "unsupported database URL '{}': use sqlite://FILE, mysql://… or postgres://…",
                redact_url(url)
            ))
        })?;
        let store = match backend {
            Backend::Sqlite => Store::connect_sqlite(url).await?,
            Backend::MySql | Backend::Postgres => Store::connect_server(url, backend).await?,
        };
        Ok(store)
    }

    /// SQLite: a one-connection pool for writes and a few readers (see the module's
    /// documentation), the file created on first use.
    async fn connect_sqlite(url: &str) -> StoreResult<Store> {
        let url = if url.contains("mode=") || url.contains(":memory:") {
            url.to_owned()
        } else if url.contains('?') {
            format!("{url}&mode=rwc")
        } else {
            format!("{url}?mode=rwc")
        };
        let options = AnyConnectOptions::from_str(&url)?;
        // No ping before each acquire (sqlx's default, a round trip to the
        // connection's thread): a SQLite connection is a file handle in this process,
        // not a socket that a server or a firewall may have closed, and the ping was
        // a measurable share of every short statement's cost.
        let write = AnyPoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(60))
            .after_connect(|conn, _| sqlite_pragmas(conn, WRITER_CACHE_KIB))
            .connect_with(options.clone())
            .await?;
        let read = AnyPoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(30))
            .after_connect(|conn, _| sqlite_pragmas(conn, READER_CACHE_KIB))
            .connect_with(options)
            .await?;
        Ok(Store::with_pools(Backend::Sqlite, read, write))
    }

    /// The same database through a pool of its own, for the partition leases: a lease round
    /// must not wait for a connection behind the work its partitions make (a takeover's
    /// recovery of hundreds of queued runs took every connection of the shared pool, the
    /// renewal waited past the lease time, the leases lapsed and were taken again, and the
    /// recovery began anew). Two connections on a server database; SQLite's single writer is
    /// shared, as a second one would only wait for the same file lock.
    pub async fn lease_store(&self, url: &str) -> StoreResult<Store> {
        match self.backend {
            Backend::Sqlite => Ok(self.clone()),
            backend => Store::connect_server_sized(url, backend, LEASE_CONNECTIONS).await,
        }
    }

    /// MySQL, MariaDB or PostgreSQL: one pool for reads and writes.
    async fn connect_server(url: &str, backend: Backend) -> StoreResult<Store> {
        Store::connect_server_sized(url, backend, SERVER_CONNECTIONS).await
    }

    /// [`Store::connect_server`] with a pool of at most `max` connections.
    async fn connect_server_sized(url: &str, backend: Backend, max: u32) -> StoreResult<Store> {
        let pool = AnyPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(Duration::from_secs(30))
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if backend == Backend::MySql {
                        // InnoDB's default, REPEATABLE READ, makes the claim's locking
                        // read of due jobs lock the gaps of the `(running,
                        // next_fire_at)` index too, so a job created or changed while
                        // fires are claimed can deadlock with the claim. Under READ
                        // COMMITTED a locking read locks the rows it returns and reads
                        // their latest committed version, which is all the claim needs
                        // (the unique fire key guards the rest), as on PostgreSQL,
                        // whose default it is.
                        conn.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                            .await?;
                    }
                    // An admin stopped inside a transaction (SIGSTOP, a paused VM, a
                    // cut network) keeps the rows it locked, and the admins that took
                    // its partitions over wait on them (a claim locks its due jobs):
                    // their fires become misfires. The server ends such a transaction
                    // and releases its locks once its client has sent nothing for
                    // `HELD_TRANSACTION_LIMIT`; the stopped admin's next statement
                    // fails, and it sends nothing it had claimed. MariaDB counts in
                    // seconds and closes the connection; MySQL has no such setting.
                    let limit = match backend {
                        Backend::Postgres => Some(format!(
                            "SET idle_in_transaction_session_timeout = {}",
                            HELD_TRANSACTION_LIMIT.as_millis()
                        )),
                        _ if is_mariadb(conn).await? => Some(format!(
                            "SET SESSION idle_transaction_timeout = {}",
                            HELD_TRANSACTION_LIMIT.as_secs().max(1)
                        )),
                        _ => None,
                    };
                    if let Some(limit) = limit {
                        conn.execute(limit.as_str()).await?;
                    }
                    Ok(())
                })
            })
            .connect(url)
            .await?;
        Ok(Store::with_pools(backend, pool.clone(), pool))
    }

    fn with_pools(backend: Backend, read: AnyPool, write: AnyPool) -> Store {
        Store {
            backend,
            read,
            write,
            pending_inserts: Default::default(),
            pending_audit: Default::default(),
        }
    }

    /// Which engine this store talks to.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Closes the connection pools.
    pub async fn close(&self) {
        self.write.close().await;
        self.read.close().await;
    }

    /// SQLite: copies what the write-ahead log holds into the database file, on a reading
    /// connection, without waiting for readers or the writer (`PASSIVE`). The admin calls it
    /// every second so that the one writing connection seldom has to checkpoint at a commit,
    /// where the copy and its `fsync` would hold up every claim and result behind it (see
    /// `sqlite_pragmas`). Other databases: nothing to do.
    pub async fn checkpoint_wal(&self) -> StoreResult<()> {
        if self.backend == Backend::Sqlite {
            sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&self.read)
                .await?;
        }
        Ok(())
    }

    /// A cheap round trip, for `/healthz`.
    pub async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        Ok(())
    }

    fn sql<'q>(&self, q: &'q str) -> std::borrow::Cow<'q, str> {
        self.backend.sql(q)
    }

    /// [`Store::sql`] of a statement built at run time (`format!`), kept as it is when this
    /// database takes it unchanged.
    fn sql_text(&self, q: String) -> String {
        let rewritten = match self.backend.sql(&q) {
            std::borrow::Cow::Owned(text) => Some(text),
            std::borrow::Cow::Borrowed(_) => None,
        };
        rewritten.unwrap_or(q)
    }

    /// Deletes what belongs to `id` from each of `tables` (`"table WHERE column = ?"`), in
    /// their order: a deleted object's dependent rows.
    async fn delete_rows_of(&self, conn: &mut AnyConnection, tables: &[impl AsRef<str>], id: i64) -> StoreResult<()> {
        for table in tables {
            let q = self.sql_text(format!("DELETE FROM {}", table.as_ref()));
            sqlx::query(&q).bind(id).execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// The row that `select` (`… WHERE id = ?`) finds for `id`, decoded by `decode`:
    /// `NotFound("{what} {id}")` when there is none.
    async fn row_by_id<T>(
        &self,
        conn: &mut AnyConnection,
        select: &str,
        id: i64,
        what: &str,
        decode: fn(&AnyRow) -> Result<T, sqlx::Error>,
    ) -> StoreResult<T> {
        let q = self.sql(select).into_owned();
        let row = sqlx::query(&q).bind(id).fetch_optional(&mut *conn).await?;
        row.map(|r| decode(&r))
            .transpose()?
            .ok_or_else(|| StoreError::NotFound(format!("{what} {id}")))
    }

    /// [`Store::row_by_id`] on a connection of the reading pool.
    async fn read_by_id<T>(
        &self,
        select: &str,
        id: i64,
        what: &str,
        decode: fn(&AnyRow) -> Result<T, sqlx::Error>,
    ) -> StoreResult<T> {
        let mut conn = self.read.acquire().await?;
        self.row_by_id(&mut conn, select, id, what, decode).await
    }

    /// Every row `select` (binding nothing) reads on the reading pool, decoded.
    async fn read_all<T>(&self, select: &str, decode: fn(&AnyRow) -> Result<T, sqlx::Error>) -> StoreResult<Vec<T>> {
        let all = sqlx::query(select).fetch_all(&self.read).await?;
        Ok(all.iter().map(decode).collect::<Result<_, _>>()?)
    }

    /// The number `sql` (`SELECT COUNT(*) AS n …`, binding nothing) counts, on the reading pool.
    async fn count(&self, sql: &str) -> StoreResult<i64> {
        Ok(rows::int(&sqlx::query(sql).fetch_one(&self.read).await?, "n")?)
    }

    /// Runs `update` with `update_values` bound and, when it matched no row, inserts one as
    /// [`Store::insert_unless_present`] does.
    async fn update_or_insert(
        &self,
        update: &str,
        update_values: &[bulk::Arg<'_>],
        into: &str,
        values: &[bulk::Arg<'_>],
    ) -> StoreResult<()> {
        let q = self.sql(update);
        let updated = bulk::bound(&q, update_values).execute(&self.write).await?;
        if updated.rows_affected() == 0 {
            self.insert_unless_present(into, values).await?;
        }
        Ok(())
    }

    /// Inserts one row, `values` bound in the order of the columns `into` names
    /// (`"table (a, b, c)"`), unless a row with its unique key is there: one inserted meanwhile
    /// (by another admin) wins.
    async fn insert_unless_present(&self, into: &str, values: &[bulk::Arg<'_>]) -> StoreResult<()> {
        let mut conn = self.write.acquire().await?;
        self.claim_row(&mut conn, into, values).await?;
        Ok(())
    }

    /// [`Store::insert_unless_present`] in `conn` (a transaction's); whether this call inserted
    /// the row. A row's unique key is a claim: of the admins that try to insert it, only the one
    /// whose insert won goes on (stores the alarm, opens the incident).
    async fn claim_row(&self, conn: &mut AnyConnection, into: &str, values: &[bulk::Arg<'_>]) -> StoreResult<bool> {
        let (prefix, suffix) = self.backend.insert_ignore();
        let q = self.sql_text(format!(
            "{prefix} INTO {into} VALUES ({}){suffix}",
            placeholders(values.len())
        ));
        let done = bulk::bound(&q, values).execute(conn).await?;
        Ok(done.rows_affected() == 1)
    }
}

/// The writing connection's page cache, in KiB (4 MB: 1,024 pages). SQLite's commit walks the
/// whole cache of the connection whenever a page split in the transaction renumbered pages:
/// `balance_nonroot` puts its new pages in file order by swapping their numbers through the
/// lock-byte page's (262,145), which leaves the cache's highest page number far past the file's
/// end, so the truncation at commit (`pcache1TruncateUnsafe`) scans every slot and page instead
/// of the few past the end. A split that is not at a tree's right edge, or that reuses a page
/// of the free list, does this; under load, several commits a second have one. With 16 MB
/// (4,096 pages) each such commit cost about 1 ms: 2–5% of the admin's CPU per workflow node
/// run (whose running-node index frees pages as nodes end), 2% per job fire; with 4 MB, under
/// 1%. The writer was no slower for it at 5,000 and 10,000 runs a second: what it writes is at
/// the tables' and indexes' ends, and it reads the rest through the WAL and the kernel's cache.
const WRITER_CACHE_KIB: u32 = 4096;
/// A reading connection's page cache, in KiB (16 MB). A reader drops its cache whenever the log
/// changed since its last read, so under load this is spent only on each read's own pages; an
/// idle admin's console reads are served from it.
const READER_CACHE_KIB: u32 = 16384;

/// WAL lets readers work while the writer commits. With `synchronous = NORMAL` in WAL mode a
/// commit is written to the WAL file (the operating system's page cache) but not fsynced;
/// a killed process (`kill -9`, panic, OOM) loses nothing that was committed, because the
/// kernel still writes those pages. A power loss or kernel crash can roll back the last
/// transactions (never corrupt the database): their fires are claimed again, runs whose trigger
/// result was rolled back are sent again, a rolled-back callback leaves its run to the lost-run
/// sweep. `cache_kib` is the connection's page cache ([`WRITER_CACHE_KIB`],
/// [`READER_CACHE_KIB`]; SQLite's default is 2 MB). (A 64 MB cache with a 256 MB memory map was
/// tried: peak RSS at 10,000 fires/s nearly doubled, mapped pages count as resident memory,
/// without a measurable gain.)
fn sqlite_pragmas(
    conn: &mut sqlx::AnyConnection,
    cache_kib: u32,
) -> futures::future::BoxFuture<'_, Result<(), sqlx::Error>> {
    Box::pin(async move {
        conn.execute("PRAGMA journal_mode = WAL").await?;
        conn.execute("PRAGMA synchronous = NORMAL").await?;
        conn.execute("PRAGMA busy_timeout = 10000").await?;
        conn.execute(format!("PRAGMA cache_size = -{cache_kib}").as_str())
            .await?;
        // The writer checkpoints itself only past 16,384 pages (64 MB) of log; normally the
        // admin's once-a-second `checkpoint_wal` on a reading connection has done it before.
        conn.execute("PRAGMA wal_autocheckpoint = 16384").await?;
        // After a checkpoint lets the log start over, its file is cut back to 64 MB.
        conn.execute("PRAGMA journal_size_limit = 67108864").await?;
        Ok(())
    })
}

/// The URL with any password replaced, for messages and logs.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let userinfo = &url[scheme_end + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{}:***{}", &url[..scheme_end + 3], user, &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::StoreError;

    #[test]
    fn only_a_database_out_of_reach_is_unreachable() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(StoreError::Db(sqlx::Error::Io(refused)).is_unreachable());
        assert!(StoreError::Db(sqlx::Error::PoolTimedOut).is_unreachable());
        // The database answered: it is there.
        assert!(!StoreError::Db(sqlx::Error::RowNotFound).is_unreachable());
        assert!(!StoreError::Db(sqlx::Error::ColumnNotFound("x".into())).is_unreachable());
        assert!(!StoreError::NotFound("run 1".into()).is_unreachable());
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(super::redact_url("mysql://u:secret@h/db"), "mysql://u:***@h/db");
        assert_eq!(super::redact_url("sqlite://x.db"), "sqlite://x.db");
    }
}
