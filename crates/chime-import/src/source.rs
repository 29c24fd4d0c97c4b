//! Reading an XXL-JOB database: which version its schema is, and its rows as they are stored.
//! Nothing here interprets a value; `convert.rs` does, without I/O.

use crate::ImportError;
use serde::Serialize;
use sqlx::mysql::{MySqlArguments, MySqlConnectOptions, MySqlPoolOptions, MySqlRow};
use sqlx::query::Query;
use sqlx::{MySql, MySqlPool, Row};
use std::collections::HashSet;
use std::str::FromStr;

/// Script versions read per job at most: the newest, as many as XXL-JOB's console keeps.
pub const GLUE_VERSIONS_KEPT: usize = 30;
/// Largest script source imported, in bytes: what the job API takes in a whole request.
pub const MAX_GLUE_SOURCE_BYTES: i64 = 1024 * 1024;
/// Script history read in one import at most, in bytes of source: versions beyond are reported
/// and not read, so an import holds at most this much of it in memory.
pub const GLUE_HISTORY_BUDGET: i64 = 64 * 1024 * 1024;
/// Users read at most; those beyond are counted and reported.
pub const MAX_USERS: usize = 10_000;

/// The XXL-JOB schema versions Chime tells apart. Each adds to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Version {
    /// 2.x (2.4 and earlier): MD5 passwords, one global executor token.
    #[serde(rename = "2.x")]
    V2,
    /// 3.2 or 3.3: SHA-256 passwords and a login token column. 3.2 speaks the 2.4 protocol
    /// to executors, 3.3 the 3.3 one; the schema does not say which.
    #[serde(rename = "3.2-3.3")]
    V3_2,
    /// 3.4: wider group titles, parameters as TEXT.
    #[serde(rename = "3.4")]
    V3_4,
    /// 3.5: groups' and jobs' `name`, an executor token per group.
    #[serde(rename = "3.5")]
    V3_5,
}

impl Version {
    /// How people name it.
    pub fn label(self) -> &'static str {
        match self {
            Version::V2 => "2.x",
            Version::V3_2 => "3.2-3.3",
            Version::V3_4 => "3.4",
            Version::V3_5 => "3.5",
        }
    }
}

/// `xxl_job_group`.
#[derive(Debug, Clone, Default)]
pub(crate) struct XxlGroup {
    pub(crate) id: i64,
    pub(crate) app_name: String,
    /// `title` (`name` in 3.5).
    pub(crate) title: String,
    /// 0 automatic registration, 1 manual.
    pub(crate) address_type: i64,
    pub(crate) address_list: String,
    /// 3.5 only.
    pub(crate) access_token: Option<String>,
}

/// `xxl_job_info`. Times are as stored: `DATETIME` text in XXL-JOB's zone, or epoch ms.
#[derive(Debug, Clone, Default)]
pub(crate) struct XxlJob {
    pub(crate) id: i64,
    pub(crate) job_group: i64,
    /// `job_desc` (`name` in 3.5).
    pub(crate) job_desc: String,
    pub(crate) add_time: Option<String>,
    pub(crate) author: String,
    pub(crate) alarm_email: String,
    pub(crate) schedule_type: String,
    pub(crate) schedule_conf: String,
    pub(crate) misfire_strategy: String,
    pub(crate) executor_route_strategy: String,
    pub(crate) executor_handler: String,
    pub(crate) executor_param: String,
    pub(crate) executor_block_strategy: String,
    pub(crate) executor_timeout: i64,
    pub(crate) executor_fail_retry_count: i64,
    pub(crate) glue_type: String,
    pub(crate) glue_source: String,
    pub(crate) glue_remark: String,
    /// The size of the stored source in bytes; a source over [`MAX_GLUE_SOURCE_BYTES`] is not
    /// read (`glue_source` is empty).
    pub(crate) glue_source_bytes: i64,
    pub(crate) glue_updatetime: Option<String>,
    pub(crate) child_jobid: String,
    pub(crate) trigger_status: i64,
    pub(crate) trigger_last_time: i64,
    pub(crate) trigger_next_time: i64,
}

/// `xxl_job_logglue`: one saved script version.
#[derive(Debug, Clone, Default)]
pub(crate) struct XxlGlue {
    pub(crate) job_id: i64,
    pub(crate) glue_type: String,
    /// `None`: not read, for the reason in `omitted`.
    pub(crate) glue_source: Option<String>,
    pub(crate) glue_remark: String,
    pub(crate) add_time: Option<String>,
    /// Its source's size in bytes.
    pub(crate) bytes: i64,
    /// Why its source was not read.
    pub(crate) omitted: Option<Omitted>,
}

/// Why a script version's source was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Omitted {
    /// Over [`MAX_GLUE_SOURCE_BYTES`].
    TooLarge,
    /// A type Chime does not know.
    UnknownType,
    /// The import's [`GLUE_HISTORY_BUDGET`] was spent.
    OverBudget,
}

/// `xxl_job_user`.
#[derive(Debug, Clone, Default)]
pub(crate) struct XxlUser {
    pub(crate) username: String,
    /// Hex digest: MD5 (2.x) or SHA-256 (3.2+).
    pub(crate) password: String,
    /// 1 administrator, 0 user.
    pub(crate) role: i64,
    /// Comma-separated group ids.
    pub(crate) permission: String,
}

/// `xxl_job_log`: one trigger.
#[derive(Debug, Clone, Default)]
pub(crate) struct XxlLog {
    pub(crate) id: i64,
    pub(crate) job_id: i64,
    pub(crate) executor_address: String,
    pub(crate) executor_handler: String,
    pub(crate) executor_param: String,
    pub(crate) executor_sharding_param: String,
    pub(crate) executor_fail_retry_count: i64,
    pub(crate) trigger_time: Option<String>,
    pub(crate) trigger_code: i64,
    pub(crate) trigger_msg: String,
    pub(crate) handle_time: Option<String>,
    pub(crate) handle_code: i64,
    pub(crate) handle_msg: String,
    pub(crate) alarm_status: i64,
}

/// Everything read from one XXL-JOB database.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) version: Version,
    pub(crate) groups: Vec<XxlGroup>,
    pub(crate) jobs: Vec<XxlJob>,
    /// The newest [`GLUE_VERSIONS_KEPT`] script versions of each job, oldest first.
    pub(crate) glues: Vec<XxlGlue>,
    /// Per job, how many older script versions were not read.
    pub(crate) older_glues: Vec<(i64, i64)>,
    /// The first [`MAX_USERS`] users.
    pub(crate) users: Vec<XxlUser>,
    /// How many users there are in all.
    pub(crate) user_count: i64,
    pub(crate) logs: Vec<XxlLog>,
    /// The largest run id XXL-JOB has given (its executors may still report on any of them).
    pub(crate) max_log_id: i64,
}

/// Which logs to read.
#[derive(Debug, Clone)]
pub(crate) struct LogSelection {
    /// Logs triggered at or after this `DATETIME` text (XXL-JOB's zone); `None`: only the runs
    /// still waiting for a result.
    pub(crate) since: Option<String>,
}

/// A `DATETIME` column as `YYYY-MM-DD HH:MM:SS` text (NULL stays NULL).
fn datetime(column: &str) -> String {
    format!("DATE_FORMAT({column}, '%Y-%m-%d %H:%i:%s') AS {column}")
}

/// An integer column of any width as `BIGINT`.
fn int(column: &str) -> String {
    format!("CAST({column} AS SIGNED) AS {column}")
}

/// Every row `query` selects, each read by `read`.
async fn read_rows<T>(
    pool: &MySqlPool,
    query: Query<'_, MySql, MySqlArguments>,
    read: impl Fn(&MySqlRow) -> Result<T, sqlx::Error>,
) -> Result<Vec<T>, sqlx::Error> {
    query.fetch_all(pool).await?.iter().map(read).collect()
}

fn text(row: &MySqlRow, col: &str) -> Result<String, sqlx::Error> {
    Ok(row.try_get::<Option<String>, _>(col)?.unwrap_or_default())
}

fn opt_text(row: &MySqlRow, col: &str) -> Result<Option<String>, sqlx::Error> {
    row.try_get::<Option<String>, _>(col)
}

fn num(row: &MySqlRow, col: &str) -> Result<i64, sqlx::Error> {
    Ok(row.try_get::<Option<i64>, _>(col)?.unwrap_or_default())
}

/// Connects to the XXL-JOB database at `url` (`mysql://user:password@host:port/xxl_job`).
pub(crate) async fn connect(url: &str) -> Result<MySqlPool, ImportError> {
    let options = MySqlConnectOptions::from_str(url).map_err(|e| ImportError::Source(e.to_string()))?;
    MySqlPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .map_err(|e| ImportError::Source(format!("cannot connect: {e}")))
}

/// The version of the schema: read from which columns its tables have.
pub(crate) async fn detect(pool: &MySqlPool) -> Result<Version, ImportError> {
    let rows = sqlx::query(
        "SELECT CAST(TABLE_NAME AS CHAR) AS t, CAST(COLUMN_NAME AS CHAR) AS c, CAST(DATA_TYPE AS CHAR) AS d, \
         CAST(COALESCE(CHARACTER_MAXIMUM_LENGTH, 0) AS SIGNED) AS n \
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'xxl\\_job\\_%'",
    )
    .fetch_all(pool)
    .await?;
    let mut columns = HashSet::new();
    let mut title_len = 0;
    let mut param_type = String::new();
    for r in &rows {
        let (t, c) = (text(r, "t")?.to_ascii_lowercase(), text(r, "c")?.to_ascii_lowercase());
        if t == "xxl_job_group" && c == "title" {
            title_len = num(r, "n")?;
        }
        if t == "xxl_job_info" && c == "executor_param" {
            param_type = text(r, "d")?.to_ascii_lowercase();
        }
        columns.insert(format!("{t}.{c}"));
    }
    let has = |c: &str| columns.contains(c);
    for needed in [
        "xxl_job_group.app_name",
        "xxl_job_info.job_group",
        "xxl_job_user.username",
        "xxl_job_log.job_id",
    ] {
        if !has(needed) {
            return Err(ImportError::Source(format!(
                "not an XXL-JOB database: no column {needed} (is the database name in the URL right?)"
            )));
        }
    }
    Ok(if has("xxl_job_group.name") && has("xxl_job_info.name") {
        Version::V3_5
    } else if !has("xxl_job_user.token") {
        Version::V2
    } else if title_len >= 64 || param_type.contains("text") {
        Version::V3_4
    } else {
        Version::V3_2
    })
}

/// Reads every group, job, script version and user, and the logs `logs` selects.
pub(crate) async fn read(pool: &MySqlPool, version: Version, logs: &LogSelection) -> Result<Source, ImportError> {
    let v35 = version == Version::V3_5;
    let (title, desc) = if v35 { ("name", "name") } else { ("title", "job_desc") };
    let token = if v35 { "access_token" } else { "NULL AS access_token" };
    let q = format!(
        "SELECT {}, app_name, {title} AS title, {}, address_list, {token} FROM xxl_job_group ORDER BY id",
        int("id"),
        int("address_type")
    );
    let groups = read_rows(pool, sqlx::query(&q), |r| {
        Ok(XxlGroup {
            id: num(r, "id")?,
            app_name: text(r, "app_name")?,
            title: text(r, "title")?,
            address_type: num(r, "address_type")?,
            address_list: text(r, "address_list")?,
            access_token: opt_text(r, "access_token")?,
        })
    })
    .await?;

    let q = format!(
        "SELECT {}, {}, {desc} AS job_desc, {}, author, alarm_email, schedule_type, schedule_conf, misfire_strategy, \
         executor_route_strategy, executor_handler, executor_param, executor_block_strategy, {}, {}, glue_type, \
         CASE WHEN LENGTH(glue_source) <= {MAX_GLUE_SOURCE_BYTES} THEN glue_source END AS glue_source, \
         CAST(COALESCE(LENGTH(glue_source), 0) AS SIGNED) AS glue_source_bytes, \
         glue_remark, {}, child_jobid, {}, {}, {} FROM xxl_job_info ORDER BY id",
        int("id"),
        int("job_group"),
        datetime("add_time"),
        int("executor_timeout"),
        int("executor_fail_retry_count"),
        datetime("glue_updatetime"),
        int("trigger_status"),
        int("trigger_last_time"),
        int("trigger_next_time"),
    );
    let jobs = read_rows(pool, sqlx::query(&q), |r| {
        Ok(XxlJob {
            id: num(r, "id")?,
            job_group: num(r, "job_group")?,
            job_desc: text(r, "job_desc")?,
            add_time: opt_text(r, "add_time")?,
            author: text(r, "author")?,
            alarm_email: text(r, "alarm_email")?,
            schedule_type: text(r, "schedule_type")?,
            schedule_conf: text(r, "schedule_conf")?,
            misfire_strategy: text(r, "misfire_strategy")?,
            executor_route_strategy: text(r, "executor_route_strategy")?,
            executor_handler: text(r, "executor_handler")?,
            executor_param: text(r, "executor_param")?,
            executor_block_strategy: text(r, "executor_block_strategy")?,
            executor_timeout: num(r, "executor_timeout")?,
            executor_fail_retry_count: num(r, "executor_fail_retry_count")?,
            glue_type: text(r, "glue_type")?,
            glue_source: text(r, "glue_source")?,
            glue_remark: text(r, "glue_remark")?,
            glue_source_bytes: num(r, "glue_source_bytes")?,
            glue_updatetime: opt_text(r, "glue_updatetime")?,
            child_jobid: text(r, "child_jobid")?,
            trigger_status: num(r, "trigger_status")?,
            trigger_last_time: num(r, "trigger_last_time")?,
            trigger_next_time: num(r, "trigger_next_time")?,
        })
    })
    .await?;

    let (glues, older_glues) = read_glues(pool).await?;

    let q = format!(
        "SELECT username, password, {}, permission FROM xxl_job_user ORDER BY id LIMIT {MAX_USERS}",
        int("role")
    );
    let users = read_rows(pool, sqlx::query(&q), |r| {
        Ok(XxlUser {
            username: text(r, "username")?,
            password: text(r, "password")?,
            role: num(r, "role")?,
            permission: text(r, "permission")?,
        })
    })
    .await?;
    let count = sqlx::query("SELECT CAST(COUNT(*) AS SIGNED) AS n FROM xxl_job_user")
        .fetch_one(pool)
        .await?;
    let user_count = num(&count, "n")?;

    // Runs still waiting for a result are always read: their executors will report to Chime.
    let waiting = "(trigger_code IN (0, 200) AND handle_code = 0)";
    let filter = match &logs.since {
        Some(_) => format!("WHERE trigger_time >= ? OR {waiting}"),
        None => format!("WHERE {waiting}"),
    };
    let q = format!(
        "SELECT {}, {}, executor_address, executor_handler, executor_param, executor_sharding_param, {}, {}, \
         {}, trigger_msg, {}, {}, handle_msg, {} FROM xxl_job_log {filter} ORDER BY id",
        int("id"),
        int("job_id"),
        int("executor_fail_retry_count"),
        datetime("trigger_time"),
        int("trigger_code"),
        datetime("handle_time"),
        int("handle_code"),
        int("alarm_status"),
    );
    let mut query = sqlx::query(&q);
    if let Some(since) = &logs.since {
        query = query.bind(since);
    }
    let logs = read_rows(pool, query, |r| {
        Ok(XxlLog {
            id: num(r, "id")?,
            job_id: num(r, "job_id")?,
            executor_address: text(r, "executor_address")?,
            executor_handler: text(r, "executor_handler")?,
            executor_param: text(r, "executor_param")?,
            executor_sharding_param: text(r, "executor_sharding_param")?,
            executor_fail_retry_count: num(r, "executor_fail_retry_count")?,
            trigger_time: opt_text(r, "trigger_time")?,
            trigger_code: num(r, "trigger_code")?,
            trigger_msg: text(r, "trigger_msg")?,
            handle_time: opt_text(r, "handle_time")?,
            handle_code: num(r, "handle_code")?,
            handle_msg: text(r, "handle_msg")?,
            alarm_status: num(r, "alarm_status")?,
        })
    })
    .await?;
    let max = sqlx::query("SELECT CAST(COALESCE(MAX(id), 0) AS SIGNED) AS m FROM xxl_job_log")
        .fetch_one(pool)
        .await?;
    Ok(Source {
        version,
        groups,
        jobs,
        glues,
        older_glues,
        users,
        user_count,
        logs,
        max_log_id: num(&max, "m")?,
    })
}

/// Reads the script history a job at a time: the newest [`GLUE_VERSIONS_KEPT`] versions of
/// each (sizes first, then the sources worth reading), never a source over
/// [`MAX_GLUE_SOURCE_BYTES`] or of an unknown type, and no more than [`GLUE_HISTORY_BUDGET`] in
/// all. Returns them oldest first per job, and per job the count of older versions not read.
/// A history of hundreds of megabytes once came into memory whole, twice over.
async fn read_glues(pool: &MySqlPool) -> Result<(Vec<XxlGlue>, Vec<(i64, i64)>), ImportError> {
    let counts = sqlx::query(&format!(
        "SELECT {}, CAST(COUNT(*) AS SIGNED) AS n FROM xxl_job_logglue GROUP BY job_id ORDER BY job_id",
        int("job_id")
    ))
    .fetch_all(pool)
    .await?;
    let mut glues = Vec::new();
    let mut older = Vec::new();
    let mut budget = GLUE_HISTORY_BUDGET;
    for c in &counts {
        let (job_id, n) = (num(c, "job_id")?, num(c, "n")?);
        if n > GLUE_VERSIONS_KEPT as i64 {
            older.push((job_id, n - GLUE_VERSIONS_KEPT as i64));
        }
        let q = format!(
            "SELECT {}, glue_type, glue_remark, {}, CAST(COALESCE(LENGTH(glue_source), 0) AS SIGNED) AS bytes \
             FROM xxl_job_logglue WHERE job_id = ? ORDER BY add_time DESC, id DESC LIMIT {GLUE_VERSIONS_KEPT}",
            int("id"),
            datetime("add_time")
        );
        let mut versions = Vec::new();
        let mut wanted = Vec::new();
        for r in sqlx::query(&q).bind(job_id).fetch_all(pool).await? {
            let glue_type = text(&r, "glue_type")?;
            let bytes = num(&r, "bytes")?;
            let omitted = if glue_type.trim().parse::<chime_protocol::GlueType>().is_err() {
                Some(Omitted::UnknownType)
            } else if bytes > MAX_GLUE_SOURCE_BYTES {
                Some(Omitted::TooLarge)
            } else if bytes > budget {
                Some(Omitted::OverBudget)
            } else {
                budget -= bytes;
                wanted.push(num(&r, "id")?);
                None
            };
            versions.push((
                num(&r, "id")?,
                XxlGlue {
                    job_id,
                    glue_type,
                    glue_source: None,
                    glue_remark: text(&r, "glue_remark")?,
                    add_time: opt_text(&r, "add_time")?,
                    bytes,
                    omitted,
                },
            ));
        }
        if !wanted.is_empty() {
            let q = format!(
                "SELECT {}, glue_source FROM xxl_job_logglue WHERE id IN ({})",
                int("id"),
                vec!["?"; wanted.len()].join(", ")
            );
            let mut query = sqlx::query(&q);
            for id in &wanted {
                query = query.bind(*id);
            }
            for r in query.fetch_all(pool).await? {
                let id = num(&r, "id")?;
                if let Some((_, v)) = versions.iter_mut().find(|(vid, _)| *vid == id) {
                    v.glue_source = Some(text(&r, "glue_source")?);
                }
            }
        }
        glues.extend(versions.into_iter().rev().map(|(_, v)| v));
    }
    Ok((glues, older))
}
