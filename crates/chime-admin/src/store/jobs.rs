//! Job definitions: create, change, start/stop, delete; child-job checks.

use super::audit::NewAuditEntry;
use super::filter::like_pattern;
use super::job_columns::{bind_cells, draft_columns, insert_sql, set_sql, Cell, JOB_COLUMNS};
use super::rows;
use super::{placeholders, Store, StoreError, StoreResult, PARTITIONS};
use crate::api::calendar_with_more;
use crate::business_days::BusinessDays;
use crate::calendar::Calendar;
use crate::model::{now_ms, Invalid, Job, JobDraft, WAITING_FOR_RUN_END};
use chime_protocol::ScheduleType;
use sqlx::any::Any;
use sqlx::Transaction;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How a job list is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JobSort {
    /// By id (the default, and the order `after_id` pages in).
    #[default]
    Id,
    /// By description.
    Description,
    /// By handler name.
    Handler,
    /// By owner.
    Owner,
    /// By group id.
    Group,
    /// By next fire time.
    NextFire,
}

impl JobSort {
    /// Every sort key as the API names it.
    pub const NAMES: &'static [&'static str] = &["id", "description", "handler", "owner", "group_id", "next_fire_at"];

    /// The sort key named `name` (one of [`JobSort::NAMES`]).
    pub fn parse(name: &str) -> Option<JobSort> {
        Some(match name {
            "id" => JobSort::Id,
            "description" => JobSort::Description,
            "handler" => JobSort::Handler,
            "owner" => JobSort::Owner,
            "group_id" => JobSort::Group,
            "next_fire_at" => JobSort::NextFire,
            _ => return None,
        })
    }

    /// What it orders by: a constant, never user text. Text is compared in lower case, so the
    /// order is the same on every database (their default collations treat case differently).
    fn order_key(self) -> &'static str {
        match self {
            JobSort::Id => "id",
            JobSort::Description => "LOWER(description)",
            JobSort::Handler => "LOWER(handler)",
            JobSort::Owner => "LOWER(owner)",
            JobSort::Group => "group_id",
            JobSort::NextFire => "next_fire_at",
        }
    }
}

/// A job list query: filters, order and page. Text filters match any part, in any case.
#[derive(Debug, Clone)]
pub struct JobQuery {
    /// Only this group.
    pub group_id: Option<i64>,
    /// Only these groups (a console user's); `None`: every group.
    pub scope: Option<Vec<i64>>,
    /// Only started (true) or stopped (false) jobs.
    pub running: Option<bool>,
    /// Description, handler or owner contains this.
    pub text: Option<String>,
    /// Handler contains this.
    pub handler: Option<String>,
    /// Description contains this.
    pub description: Option<String>,
    /// Owner contains this.
    pub owner: Option<String>,
    /// Order.
    pub sort: JobSort,
    /// Reverse order.
    pub descending: bool,
    /// Only jobs with a larger id.
    pub after_id: i64,
    /// Jobs of the ordered list to skip.
    pub offset: i64,
    /// At most this many.
    pub limit: i64,
}

/// A due job as the scheduler's claim sees it.
pub type JobDue = Job;

/// `updated_at = ` this, bound with `now` twice: the new value is strictly greater than the old
/// one even when two edits fall in the same millisecond or clocks of several admins disagree.
/// The claim loop's job cache (`Store::claim_due_fires`) trusts `updated_at` to tell a changed
/// job, so every edit of a job's definition must move it; the workflow loop's cache of
/// workflows (`Store::fire_workflows`) likewise.
pub(super) const BUMP_UPDATED_AT: &str = "CASE WHEN updated_at >= ? THEN updated_at + 1 ELSE ? END";

/// The first fire time after `now` of a job (with its further schedules, `more`) or a workflow
/// about to be (re)started: a fixed rate's grid starts at `now`.
pub(crate) fn first_fire(cal: Result<Calendar, String>, now: i64) -> Result<i64, Invalid> {
    let cal = cal.map_err(|e| Invalid::new("schedule_expr", e))?;
    cal.next_after(now).ok_or_else(|| match cal.business_days() {
        Some(_) => Invalid::new(
            "calendar",
            "the calendar has no business day on which the schedule fires",
        ),
        None => Invalid::new("schedule_expr", "the schedule has no fire time in the future"),
    })
}

/// The first fire time after `now` of the job `draft` defines, started now, on the business
/// days of `business` (its calendar's, read in the writing transaction).
fn draft_first_fire(draft: &JobDraft, business: Option<Arc<BusinessDays>>, now: i64) -> Result<i64, Invalid> {
    let cal = calendar_with_more(
        draft.schedule_type,
        &draft.schedule_expr,
        &draft.time_zone,
        &draft.more_schedules,
        now,
    )
    .and_then(|c| c.with_business_days(business));
    first_fire(cal, now)
}

/// The columns of a new job: its definition, and a schedule starting at `now` with its first
/// fire at `next` (0: not running). Its partition is set once its id is known.
fn new_job_columns(
    draft: &JobDraft,
    key: Option<&str>,
    group_id: i64,
    now: i64,
    next: i64,
) -> Vec<(&'static str, Cell)> {
    let mut cells = draft_columns(draft, key, group_id);
    cells.extend([
        ("partition_no", Cell::Int(0)),
        ("glue_updated_at", Cell::Int(now)),
        ("anchor_at", Cell::Int(now)),
        ("next_fire_at", Cell::Int(next)),
        ("last_fire_at", Cell::Int(0)),
        ("created_at", Cell::Int(now)),
        ("updated_at", Cell::Int(now)),
    ]);
    cells
}

/// A unique violation on the job table is a key its group already has (`(group_id, job_key)`
/// is the only unique index on it besides the id).
fn key_taken(e: sqlx::Error, key: Option<&str>) -> StoreError {
    StoreError::unique_violation_as(e, || {
        StoreError::Invalid(Invalid::new(
            "key",
            format!("the group already has a job with key '{}'", key.unwrap_or("")),
        ))
    })
}

/// The rows that belong to a job, deleted with it: each table with the condition that names
/// the job's id (one place for a job's delete and `apply`'s prune).
pub(super) const JOB_DEPENDENTS: [(&str, &str); 4] = [
    ("run", "job_id"),
    ("glue_version", "job_id"),
    ("backfill", "target = 'job' AND target_id"),
    ("backfill_fire", "target = 'job' AND target_id"),
];

impl Store {
    /// Checks, inside the writing transaction, that the draft's group still exists.
    async fn check_group(&self, tx: &mut Transaction<'static, Any>, draft: &JobDraft) -> StoreResult<i64> {
        let id = draft.group_id;
        let q = self.sql("SELECT id FROM executor_group WHERE id = ?");
        match sqlx::query(&q).bind(id).fetch_optional(&mut **tx).await? {
            Some(_) => Ok(id),
            None => Err(Invalid::new("group_id", format!("executor group {id} does not exist")).into()),
        }
    }

    /// Checks that every child exists and that `job_id → children` closes no cycle.
    pub(super) async fn check_children(
        &self,
        tx: &mut Transaction<'static, Any>,
        job_id: Option<i64>,
        children: &[i64],
    ) -> StoreResult<()> {
        if children.is_empty() {
            return Ok(());
        }
        let found: HashSet<i64> = self
            .fetch_in(tx, "SELECT id FROM job WHERE id IN ({in})", children, &[])
            .await?
            .iter()
            .map(|r| rows::int(r, "id"))
            .collect::<Result<_, _>>()?;
        if let Some(missing) = children.iter().find(|c| !found.contains(c)) {
            return Err(Invalid::new("child_job_ids", format!("job {missing} does not exist")).into());
        }
        let Some(job_id) = job_id else { return Ok(()) };
        // A cycle through this job means some child reaches it again.
        let edges_rows = sqlx::query("SELECT id, child_job_ids FROM job WHERE child_job_ids <> ''")
            .fetch_all(&mut **tx)
            .await?;
        let mut edges: HashMap<i64, Vec<i64>> = HashMap::new();
        for r in &edges_rows {
            edges.insert(rows::int(r, "id")?, rows::id_list(&rows::text(r, "child_job_ids")?));
        }
        edges.insert(job_id, children.to_vec());
        let mut stack: Vec<i64> = children.to_vec();
        let mut seen = HashSet::new();
        while let Some(n) = stack.pop() {
            if n == job_id {
                return Err(Invalid::new(
                    "child_job_ids",
                    format!("job {job_id} would trigger itself through its children (cycle)"),
                )
                .into());
            }
            if seen.insert(n) {
                stack.extend(edges.get(&n).into_iter().flatten().copied());
            }
        }
        Ok(())
    }

    /// Creates a job (and its first script version), starting it when the draft says so.
    /// Creates that arrive together are committed together (`job_inserts.rs`).
    pub async fn insert_job(&self, draft: &JobDraft, author: &str) -> StoreResult<Job> {
        self.insert_job_grouped(draft, author, None).await
    }

    /// [`Store::insert_job`] with the create's audit entry, when given, written in the same
    /// transaction: the job and the record of who made it are committed together, with no
    /// second commit for the entry.
    pub async fn insert_job_audited(
        &self,
        draft: &JobDraft,
        author: &str,
        audit: Option<NewAuditEntry>,
    ) -> StoreResult<Job> {
        self.insert_job_grouped(draft, author, audit).await
    }

    /// Creates a job (and writes its audit entry) in a transaction of its own and returns its
    /// id.
    pub(super) async fn insert_job_alone(
        &self,
        draft: &JobDraft,
        author: &str,
        audit: Option<&NewAuditEntry>,
    ) -> StoreResult<i64> {
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let group_id = self.check_group(&mut tx, draft).await?;
        self.check_children(&mut tx, None, &draft.child_job_ids).await?;
        let id = self.insert_job_tx(&mut tx, group_id, draft, author, now).await?;
        self.insert_audit_rows(&mut tx, audit.into_iter()).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Inserts a job in `tx` (group and children already checked) and returns its id. Without
    /// a key in the draft it is named `job-<id>`; a key its group already has is refused.
    pub(super) async fn insert_job_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        group_id: i64,
        draft: &JobDraft,
        author: &str,
        now: i64,
    ) -> StoreResult<i64> {
        let id = self.insert_job_row(tx, group_id, draft, now).await?;
        self.name_new_jobs(tx, &[id]).await?;
        if draft.glue_type.is_script() {
            self.insert_glue_version(tx, id, draft, author, now).await?;
        }
        Ok(id)
    }

    /// Inserts a job's row, not yet named nor in its partition (see [`Store::name_new_jobs`]).
    pub(super) async fn insert_job_row(
        &self,
        tx: &mut Transaction<'static, Any>,
        group_id: i64,
        draft: &JobDraft,
        now: i64,
    ) -> StoreResult<i64> {
        let business = self.business_days_tx(tx, &draft.calendar).await?;
        let next = if draft.running {
            draft_first_fire(draft, business, now)?
        } else {
            0
        };
        let cells = new_job_columns(draft, draft.key.as_deref(), group_id, now, next);
        let q = self.sql_text(format!("{} RETURNING id", insert_sql("job", &cells)));
        let row = bind_cells(sqlx::query(&q), &cells)
            .fetch_one(&mut **tx)
            .await
            .map_err(|e| key_taken(e, draft.key.as_deref()))?;
        Ok(rows::int(&row, 0)?)
    }

    /// Puts new jobs in their partitions (by id) and names those created without a key
    /// `job-<id>`: both need the id, which the insert gives. A `job-<id>` another job of the
    /// group already has as its key is refused.
    pub(super) async fn name_new_jobs(&self, tx: &mut Transaction<'static, Any>, ids: &[i64]) -> StoreResult<()> {
        let partition = if self.backend == super::Backend::Sqlite {
            format!("id % {PARTITIONS}")
        } else {
            format!("MOD(id, {PARTITIONS})")
        };
        // MySQL reads `||` as OR; the others have no CONCAT of a number everywhere.
        let key = if self.backend == super::Backend::MySql {
            "CONCAT('job-', id)"
        } else {
            "'job-' || id"
        };
        let sql = format!(
            "UPDATE job SET partition_no = {partition}, job_key = COALESCE(job_key, {key}) WHERE id IN ({{in}})"
        );
        let named = match ids {
            [id] => format!("job-{id}"),
            _ => "job-<id>".to_owned(),
        };
        self.execute_in(tx, &sql, ids, &[]).await.map_err(|e| match e {
            StoreError::Db(e) => key_taken(e, Some(&named)),
            other => other,
        })?;
        Ok(())
    }

    pub(super) async fn insert_glue_version(
        &self,
        tx: &mut Transaction<'static, Any>,
        job_id: i64,
        draft: &JobDraft,
        author: &str,
        now: i64,
    ) -> StoreResult<()> {
        let q = self.sql(
            "INSERT INTO glue_version (job_id, glue_type, glue_source, author, created_at) VALUES (?, ?, ?, ?, ?)",
        );
        sqlx::query(&q)
            .bind(job_id)
            .bind(draft.glue_type.as_str())
            .bind(&draft.glue_source)
            .bind(author)
            .bind(now)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    /// Replaces a job's definition. The schedule restarts from now when it changed or when the
    /// job is being started; a script change adds a version with its author.
    pub async fn update_job(&self, id: i64, draft: &JobDraft, author: &str) -> StoreResult<Job> {
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let q = self.sql_text(format!(
            "SELECT {JOB_COLUMNS} FROM job WHERE id = ?{}",
            self.backend.for_update()
        ));
        let Some(row) = sqlx::query(&q).bind(id).fetch_optional(&mut *tx).await? else {
            return Err(StoreError::NotFound(format!("job {id}")));
        };
        let old = rows::job(&row)?;
        let group_id = self.check_group(&mut tx, draft).await?;
        self.check_children(&mut tx, Some(id), &draft.child_job_ids).await?;
        self.update_job_tx(&mut tx, &old, group_id, draft, author, now).await?;
        tx.commit().await?;
        self.job(id).await
    }

    /// Replaces `old`'s definition in `tx` (group and children already checked, `old` read
    /// for update). A key its group already has is refused.
    pub(super) async fn update_job_tx(
        &self,
        tx: &mut Transaction<'static, Any>,
        old: &Job,
        group_id: i64,
        draft: &JobDraft,
        author: &str,
        now: i64,
    ) -> StoreResult<()> {
        let id = old.id;
        let schedule_changed = old.schedule_type != draft.schedule_type
            || old.schedule_expr != draft.schedule_expr
            || old.time_zone != draft.time_zone
            || old.more_schedules != draft.more_schedules
            || old.calendar != draft.calendar;
        let business = self.business_days_tx(tx, &draft.calendar).await?;
        let (anchor, next) = if !draft.running {
            (old.anchor_at, 0)
        } else if old.running
            && old.next_fire_at == WAITING_FOR_RUN_END
            && draft.schedule_type == ScheduleType::FixDelay
        {
            // A fixed-delay job whose run is under way keeps waiting for it; the new delay
            // applies from its end.
            (now, WAITING_FOR_RUN_END)
        } else if schedule_changed || !old.running {
            (now, draft_first_fire(draft, business, now)?)
        } else {
            (old.anchor_at, old.next_fire_at)
        };
        let glue_changed = old.glue_type != draft.glue_type || old.glue_source != draft.glue_source;
        let glue_updated_at = if glue_changed { now } else { old.glue_updated_at };
        let key = draft.key.as_deref().unwrap_or(&old.key);
        let mut cells = draft_columns(draft, Some(key), group_id);
        cells.extend([
            ("glue_updated_at", Cell::Int(glue_updated_at)),
            ("anchor_at", Cell::Int(anchor)),
            ("next_fire_at", Cell::Int(next)),
        ]);
        let q = self.sql_text(format!(
            "UPDATE job SET {}, updated_at = {BUMP_UPDATED_AT} WHERE id = ?",
            set_sql(&cells)
        ));
        bind_cells(sqlx::query(&q), &cells)
            .bind(now)
            .bind(now)
            .bind(id)
            .execute(&mut **tx)
            .await
            .map_err(|e| key_taken(e, Some(key)))?;
        if glue_changed && draft.glue_type.is_script() {
            self.insert_glue_version(tx, id, draft, author, now).await?;
        }
        Ok(())
    }

    /// Starts (schedules from now) or stops a job.
    pub async fn set_job_running(&self, id: i64, running: bool) -> StoreResult<Job> {
        let job = self.job(id).await?;
        let now = now_ms();
        if running {
            if job.schedule_type == ScheduleType::None {
                return Err(Invalid::new(
                    "running",
                    "a job with schedule type NONE cannot be started; trigger it instead",
                )
                .into());
            }
            if job.running {
                return Ok(job);
            }
            let next = first_fire(job.calendar(now), now)?;
            self.set_scheduled("job", id, Some(next), now).await?;
        } else {
            self.set_scheduled("job", id, None, now).await?;
        }
        self.job(id).await
    }

    /// Starts scheduling row `id` of `table` (`job` or `workflow`, scheduled alike) from `now`,
    /// its first fire at `first_fire`, or stops it (`None`). Starting a started one changes
    /// nothing; otherwise it moves `updated_at` forward.
    pub(super) async fn set_scheduled(
        &self,
        table: &'static str,
        id: i64,
        first_fire: Option<i64>,
        now: i64,
    ) -> StoreResult<()> {
        let q = match first_fire {
            Some(_) => format!(
                "UPDATE {table} SET running = 1, anchor_at = ?, next_fire_at = ?, updated_at = {BUMP_UPDATED_AT} \
                 WHERE id = ? AND running = 0"
            ),
            None => {
                format!("UPDATE {table} SET running = 0, next_fire_at = 0, updated_at = {BUMP_UPDATED_AT} WHERE id = ?")
            }
        };
        let q = self.sql(&q).into_owned();
        let mut query = sqlx::query(&q);
        if let Some(next) = first_fire {
            query = query.bind(now).bind(next);
        }
        query.bind(now).bind(now).bind(id).execute(&self.write).await?;
        Ok(())
    }

    /// Deletes a job with its runs, script versions and backfills. Refused while another job names it
    /// as a child.
    pub async fn delete_job(&self, id: i64) -> StoreResult<()> {
        let mut tx = self.write.begin().await?;
        let parents = sqlx::query("SELECT id, child_job_ids FROM job WHERE child_job_ids <> ''")
            .fetch_all(&mut *tx)
            .await?;
        for p in &parents {
            if rows::id_list(&rows::text(p, "child_job_ids")?).contains(&id) {
                let pid = rows::int(p, "id")?;
                return Err(StoreError::Conflict(format!(
                    "job {id} is a child of job {pid}; remove it there first"
                )));
            }
        }
        let q = self.sql("DELETE FROM job WHERE id = ?");
        if sqlx::query(&q).bind(id).execute(&mut *tx).await?.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("job {id}")));
        }
        let dependents = JOB_DEPENDENTS.map(|(table, column)| format!("{table} WHERE {column} = ?"));
        self.delete_rows_of(&mut tx, &dependents, id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// One job.
    pub async fn job(&self, id: i64) -> StoreResult<Job> {
        let q = format!("SELECT {JOB_COLUMNS} FROM job WHERE id = ?");
        self.read_by_id(&q, id, "job", rows::job).await
    }

    /// Jobs by id (missing ids are left out).
    pub async fn jobs_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<Job>> {
        let sql = format!("SELECT {JOB_COLUMNS} FROM job WHERE id IN ({{in}})");
        let all = self.read_in(&sql, ids, &[]).await?;
        Ok(all.iter().map(rows::job).collect::<Result<_, _>>()?)
    }

    /// Jobs, optionally of one group, by id; `after_id`/`limit` page through them. `scope`
    /// limits them to some groups (a console user's; `None`: every group) in the query itself,
    /// so a page holds `limit` jobs the caller may see.
    pub async fn list_jobs(
        &self,
        group_id: Option<i64>,
        scope: Option<&[i64]>,
        after_id: i64,
        limit: i64,
    ) -> StoreResult<Vec<Job>> {
        let mut sql = format!("SELECT {JOB_COLUMNS} FROM job WHERE id > ?");
        if group_id.is_some() {
            sql.push_str(" AND group_id = ?");
        }
        if let Some(ids) = scope {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            sql.push_str(&format!(" AND group_id IN ({})", placeholders(ids.len())));
        }
        sql.push_str(" ORDER BY id LIMIT ?");
        let q = self.sql(&sql).into_owned();
        let mut query = sqlx::query(&q).bind(after_id);
        if let Some(g) = group_id {
            query = query.bind(g);
        }
        for id in scope.unwrap_or(&[]) {
            query = query.bind(*id);
        }
        let all = query.bind(limit).fetch_all(&self.read).await?;
        Ok(all.iter().map(rows::job).collect::<Result<_, _>>()?)
    }

    /// One page of jobs matching `f` (the REST API's and the console's job list): filtered,
    /// sorted and paged in the query, within the caller's groups (`f.scope`).
    pub async fn search_jobs(&self, f: &JobQuery) -> StoreResult<Vec<Job>> {
        let mut sql = format!("SELECT {JOB_COLUMNS} FROM job WHERE id > ?");
        if f.group_id.is_some() {
            sql.push_str(" AND group_id = ?");
        }
        if let Some(ids) = &f.scope {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            sql.push_str(&format!(" AND group_id IN ({})", placeholders(ids.len())));
        }
        if f.running.is_some() {
            sql.push_str(" AND running = ?");
        }
        // LOWER on both sides: LIKE is case-insensitive on SQLite and MariaDB but not PostgreSQL;
        // '!' escapes LIKE's wildcards in the user's text.
        if f.text.is_some() {
            sql.push_str(
                " AND (LOWER(description) LIKE ? ESCAPE '!' OR LOWER(handler) LIKE ? ESCAPE '!' OR LOWER(owner) LIKE ? ESCAPE '!')",
            );
        }
        if f.handler.is_some() {
            sql.push_str(" AND LOWER(handler) LIKE ? ESCAPE '!'");
        }
        if f.description.is_some() {
            sql.push_str(" AND LOWER(description) LIKE ? ESCAPE '!'");
        }
        if f.owner.is_some() {
            sql.push_str(" AND LOWER(owner) LIKE ? ESCAPE '!'");
        }
        let dir = if f.descending { "DESC" } else { "ASC" };
        // The id breaks ties, so paging by offset neither repeats nor skips a job.
        match f.sort {
            JobSort::Id => sql.push_str(&format!(" ORDER BY id {dir}")),
            other => sql.push_str(&format!(" ORDER BY {} {dir}, id {dir}", other.order_key())),
        }
        sql.push_str(" LIMIT ? OFFSET ?");
        let q = self.sql(&sql).into_owned();
        let mut query = sqlx::query(&q).bind(f.after_id);
        if let Some(g) = f.group_id {
            query = query.bind(g);
        }
        for id in f.scope.as_deref().unwrap_or(&[]) {
            query = query.bind(*id);
        }
        if let Some(r) = f.running {
            query = query.bind(i64::from(r));
        }
        if let Some(t) = &f.text {
            let p = like_pattern(t);
            query = query.bind(p.clone()).bind(p.clone()).bind(p);
        }
        for v in [&f.handler, &f.description, &f.owner].into_iter().flatten() {
            query = query.bind(like_pattern(v));
        }
        let all = query.bind(f.limit).bind(f.offset).fetch_all(&self.read).await?;
        Ok(all.iter().map(rows::job).collect::<Result<_, _>>()?)
    }

    /// Number of jobs (all, running).
    pub async fn count_jobs(&self) -> StoreResult<(i64, i64)> {
        let all = self.count("SELECT COUNT(*) AS n FROM job").await?;
        let running = self.count("SELECT COUNT(*) AS n FROM job WHERE running = 1").await?;
        Ok((all, running))
    }

    /// Bulk-creates running jobs (load tests and benchmarks): one transaction per 500 jobs.
    pub async fn insert_jobs_bulk(&self, drafts: &[JobDraft], group_id: i64) -> StoreResult<Vec<i64>> {
        let now = now_ms();
        let mut ids = Vec::with_capacity(drafts.len());
        for chunk in drafts.chunks(500) {
            let mut tx = self.write.begin().await?;
            let mut rows_cells = Vec::with_capacity(chunk.len());
            for d in chunk {
                let business = self.business_days_tx(&mut tx, &d.calendar).await?;
                let next = if d.running {
                    draft_first_fire(d, business, now)?
                } else {
                    0
                };
                rows_cells.push(new_job_columns(d, None, group_id, now, next));
            }
            let Some(first) = rows_cells.first() else { continue };
            let row = format!("({})", placeholders(first.len()));
            let mut sql = insert_sql("job", first);
            for _ in 1..rows_cells.len() {
                sql.push_str(", ");
                sql.push_str(&row);
            }
            sql.push_str(" RETURNING id");
            let q = self.sql(&sql).into_owned();
            let mut query = sqlx::query(&q);
            for cells in &rows_cells {
                query = bind_cells(query, cells);
            }
            let new_ids: Vec<i64> = query
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(|r| rows::int(r, 0))
                .collect::<Result<_, _>>()?;
            self.name_new_jobs(&mut tx, &new_ids).await?;
            tx.commit().await?;
            ids.extend(new_ids);
        }
        Ok(ids)
    }
}
