//! Bringing another scheduler's state into Chime, in one transaction: the groups and jobs as a
//! jobs document (applied exactly as `apply` does, matched by key, so a second import of the
//! same state changes nothing), and what a document does not carry — when each job fires next,
//! its script history, group access tokens, console users with the password hashes they had,
//! and past runs under their own ids. `chime-import` reads an XXL-JOB database into an
//! [`ImportBundle`]; this module only writes it.

use super::apply::{validate_document, Applied};
use super::rows;
use super::users::{user_row, USER_COLUMNS};
use super::{ApplyOptions, ApplyPlan, Backend, JobsDocument, Store, StoreResult};
use crate::model::now_ms;
use crate::password::is_legacy_hash;
use chime_protocol::{ScheduleType, TriggerType};
use serde::Serialize;
use sqlx::any::Any;
use sqlx::Transaction;
use std::collections::{HashMap, HashSet};

/// Everything one import writes.
#[derive(Debug, Clone, Default)]
pub struct ImportBundle {
    /// The groups and their jobs, each job with a stable key.
    pub document: JobsDocument,
    /// Groups' own executor access tokens, by app name (secrets: never printed).
    pub group_tokens: Vec<(String, String)>,
    /// What each job of the document had besides its definition.
    pub jobs: Vec<JobHistory>,
    /// Console users.
    pub users: Vec<ImportedUser>,
    /// Past (and still running) runs.
    pub runs: Vec<ImportedRun>,
    /// Runs created after the import get ids above this: the source's run ids, which its
    /// executors may still report results for, never name a new run.
    pub run_ids_above: i64,
}

/// A job's state in the source besides its definition.
#[derive(Debug, Clone, Default)]
pub struct JobHistory {
    /// Its group's app name.
    pub group: String,
    /// Its key in the document.
    pub key: String,
    /// When it was created, epoch ms (0: unknown).
    pub created_at: i64,
    /// The next fire the source had not made yet, epoch ms (0: none). A job the import creates
    /// or starts fires first at this time, so a fire the source made is not made again, and one
    /// it had not made yet is made once (late ones by the job's misfire policy).
    pub next_fire_at: i64,
    /// The last fire the source made, epoch ms (0: none).
    pub last_fire_at: i64,
    /// The script's version stamp, epoch ms (0: unknown).
    pub glue_updated_at: i64,
    /// The remark of the script's current version.
    pub glue_remark: String,
    /// Earlier script versions, oldest first.
    pub glue_versions: Vec<ImportedGlueVersion>,
}

/// One saved script version.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportedGlueVersion {
    /// GLUE type name.
    pub glue_type: String,
    /// The source.
    pub glue_source: String,
    /// What changed.
    pub remark: String,
    /// When it was saved, epoch ms.
    pub created_at: i64,
}

/// A console user as the source had it.
#[derive(Debug, Clone, Default)]
pub struct ImportedUser {
    /// Login name.
    pub username: String,
    /// A legacy hash ([`crate::password::legacy_hash`]), replaced by Argon2 at the next login.
    pub password_hash: String,
    /// Administrator (every group, users) or user (the groups listed).
    pub admin: bool,
    /// The groups a user may operate, by app name.
    pub groups: Vec<String>,
}

/// A run as the source recorded it, under its own id.
#[derive(Debug, Clone)]
pub struct ImportedRun {
    /// The source's run id, kept.
    pub id: i64,
    /// The job's group, by app name.
    pub group: String,
    /// The job's key.
    pub key: String,
    /// When it was triggered, epoch ms.
    pub scheduled_at: i64,
    /// Why.
    pub trigger_type: TriggerType,
    /// The executor it was sent to.
    pub executor_address: String,
    /// Handler at trigger time.
    pub handler: String,
    /// Parameter sent.
    pub param: String,
    /// Shard index.
    pub shard_index: i64,
    /// Shard total.
    pub shard_total: i64,
    /// Retries still allowed.
    pub retry_count: i64,
    /// Trigger result code (0: not sent, 200: accepted).
    pub trigger_code: i64,
    /// Trigger report.
    pub trigger_msg: String,
    /// When the result came, epoch ms (0: none yet).
    pub handled_at: i64,
    /// Result code (0: none yet).
    pub handle_code: i64,
    /// Result message.
    pub handle_msg: String,
    /// Alarm state.
    pub alarm_status: i64,
}

/// What became of one imported object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result", content = "reason")]
pub enum Imported {
    /// Created.
    Created,
    /// Changed to match the source.
    Updated,
    /// Already as in the source.
    Unchanged,
    /// Left as Chime has it, for the reason given (not an error).
    Kept(String),
    /// Not imported, for the reason given.
    Skipped(String),
}

/// Counts of runs by what became of them, and the ones not imported.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunCounts {
    /// Inserted.
    pub created: usize,
    /// Finished in the source since an earlier import: their results were written.
    pub updated: usize,
    /// Already there.
    pub unchanged: usize,
    /// Not imported: run id and why.
    pub skipped: Vec<(i64, String)>,
}

/// What an import did (or, for a dry run, would do).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportOutcome {
    /// Groups and jobs created and updated.
    pub plan: ApplyPlan,
    /// Jobs whose next fire was taken from the source: `(group, key, epoch ms)`.
    pub fire_times: Vec<(String, String, i64)>,
    /// Script versions added.
    pub glue_versions: usize,
    /// Groups whose own access token was set.
    pub tokens: Vec<String>,
    /// Each user, by name.
    pub users: Vec<(String, Imported)>,
    /// The runs.
    pub runs: RunCounts,
    /// False for a dry run (nothing was written).
    pub applied: bool,
}

/// Runs per multi-row insert.
const RUN_CHUNK: usize = 200;

impl Store {
    /// Writes `bundle` in one transaction (rolled back for a dry run or at the first error),
    /// with one audit entry (`import`, target `source`). The document must be valid as a
    /// whole: check each job beforehand (`apply::check_document`) to leave out the bad ones.
    pub async fn import(
        &self,
        bundle: &ImportBundle,
        source: &str,
        opts: ApplyOptions<'_>,
    ) -> StoreResult<ImportOutcome> {
        let checked = validate_document(&bundle.document, &opts)?;
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let applied = self
            .apply_in(&mut tx, checked, &bundle.document.workflows, &opts, now)
            .await?;
        let tokens = self.import_tokens(&mut tx, bundle, &applied).await?;
        let (fire_times, glue_versions) = self
            .import_job_state(&mut tx, bundle, &applied, opts.author, now)
            .await?;
        let users = self.import_users(&mut tx, bundle, &applied, now).await?;
        let runs = self.import_runs(&mut tx, bundle, &applied).await?;
        let mut out = ImportOutcome {
            plan: applied.plan,
            fire_times,
            glue_versions,
            tokens,
            users,
            runs,
            applied: false,
        };
        let changed = !out.plan.is_empty()
            || !out.tokens.is_empty()
            || !out.fire_times.is_empty()
            || out.glue_versions > 0
            || out
                .users
                .iter()
                .any(|(_, r)| matches!(r, Imported::Created | Imported::Updated))
            || out.runs.created + out.runs.updated > 0;
        if opts.dry_run {
            tx.rollback().await?;
            return Ok(out);
        }
        self.raise_run_ids_tx(&mut tx, bundle.run_ids_above).await?;
        // An import that changes nothing leaves no audit entry: a repeated import leaves no trace.
        if changed {
            let detail = serde_json::json!({
                "groups_and_jobs_created": out.plan.create.len(),
                "groups_and_jobs_updated": out.plan.update.len(),
                "glue_versions": out.glue_versions,
                "users": out.users.iter().filter(|(_, r)| matches!(r, Imported::Created | Imported::Updated)).count(),
                "runs": out.runs.created + out.runs.updated,
            })
            .to_string();
            self.insert_audit_on(&mut *tx, now, opts.author, "import", source, &detail)
                .await?;
        }
        tx.commit().await?;
        self.raise_run_ids_after(bundle.run_ids_above).await?;
        out.plan.applied = true;
        out.applied = true;
        Ok(out)
    }

    /// Sets the groups' own access tokens where they differ; returns those groups.
    async fn import_tokens(
        &self,
        tx: &mut Transaction<'static, Any>,
        bundle: &ImportBundle,
        applied: &Applied,
    ) -> StoreResult<Vec<String>> {
        let mut set = Vec::new();
        for (app, token) in &bundle.group_tokens {
            let Some(&id) = applied.group_ids.get(app) else {
                continue;
            };
            let q = self.sql("SELECT access_token FROM executor_group WHERE id = ?");
            let row = sqlx::query(&q).bind(id).fetch_one(&mut **tx).await?;
            if rows::text(&row, "access_token")? == *token {
                continue;
            }
            let q = self.sql("UPDATE executor_group SET access_token = ? WHERE id = ?");
            sqlx::query(&q).bind(token).bind(id).execute(&mut **tx).await?;
            set.push(app.clone());
        }
        Ok(set)
    }

    /// Fire times, creation times and script history of the jobs. Returns the jobs whose next
    /// fire was taken from the source and how many script versions were added.
    async fn import_job_state(
        &self,
        tx: &mut Transaction<'static, Any>,
        bundle: &ImportBundle,
        applied: &Applied,
        author: &str,
        now: i64,
    ) -> StoreResult<(Vec<(String, String, i64)>, usize)> {
        let created: HashSet<(&str, &str)> = applied
            .plan
            .create
            .iter()
            .filter_map(|e| Some((e.group.as_str(), e.key.as_deref()?)))
            .collect();
        let updated: HashMap<(&str, &str), &[String]> = applied
            .plan
            .update
            .iter()
            .filter_map(|e| Some(((e.group.as_str(), e.key.as_deref()?), e.fields.as_slice())))
            .collect();
        let mut fire_times = Vec::new();
        let mut versions = 0;
        for h in &bundle.jobs {
            let name = (h.group.as_str(), h.key.as_str());
            let Some(&id) = applied.job_ids.get(&(h.group.clone(), h.key.clone())) else {
                continue;
            };
            let is_new = created.contains(&name);
            let fields = updated.get(&name).copied().unwrap_or_default();
            let changed = |f: &str| fields.iter().any(|x| x == f);
            let started = is_new || changed("running");
            if let Some(next) = self.import_fire_times_in(tx, id, h, is_new, started, now).await? {
                fire_times.push((h.group.clone(), h.key.clone(), next));
            }
            // The script version this import wrote (created or changed) is the source's
            // current one: its remark and time.
            if (is_new || changed("glue_source") || changed("glue_type")) && h.glue_updated_at > 0 {
                self.stamp_current_glue_in(tx, id, h, author, now).await?;
            }
            versions += self.import_glue_versions_in(tx, id, &h.glue_versions, author).await?;
        }
        Ok((fire_times, versions))
    }

    /// A job's creation and last fire times, when this import created it (`is_new`), and its
    /// next fire, when this import created or started it (`started`) and it runs: returns
    /// that next fire.
    async fn import_fire_times_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: i64,
        h: &JobHistory,
        is_new: bool,
        started: bool,
        now: i64,
    ) -> StoreResult<Option<i64>> {
        let q = self.sql("SELECT schedule_type, running, anchor_at, last_fire_at FROM job WHERE id = ?");
        let row = sqlx::query(&q).bind(id).fetch_one(&mut **tx).await?;
        let running = rows::int(&row, "running")? != 0;
        let fix_rate = rows::text(&row, "schedule_type")? == ScheduleType::FixRate.as_str();
        if is_new {
            let q = self.sql("UPDATE job SET created_at = ?, last_fire_at = ? WHERE id = ?");
            sqlx::query(&q)
                .bind(if h.created_at > 0 { h.created_at } else { now })
                .bind(h.last_fire_at)
                .bind(id)
                .execute(&mut **tx)
                .await?;
        }
        // Created or started by this import: it fires first when the source would have
        // fired next, never at or before a fire Chime already made.
        if !(running && h.next_fire_at > 0 && started) {
            return Ok(None);
        }
        let next = h.next_fire_at.max(rows::int(&row, "last_fire_at")? + 1);
        // A fixed rate counts its intervals from its anchor: from this fire on, as the
        // source counted them from its last fire.
        let anchor = if fix_rate { next } else { rows::int(&row, "anchor_at")? };
        let q = self.sql("UPDATE job SET next_fire_at = ?, anchor_at = ? WHERE id = ?");
        sqlx::query(&q)
            .bind(next)
            .bind(anchor)
            .bind(id)
            .execute(&mut **tx)
            .await?;
        Ok(Some(next))
    }

    /// Gives the job's script, and the version this import saved of it, the source's time
    /// and remark.
    async fn stamp_current_glue_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: i64,
        h: &JobHistory,
        author: &str,
        now: i64,
    ) -> StoreResult<()> {
        let q = self.sql("UPDATE job SET glue_updated_at = ? WHERE id = ?");
        sqlx::query(&q)
            .bind(h.glue_updated_at)
            .bind(id)
            .execute(&mut **tx)
            .await?;
        let q = self.sql(
            "UPDATE glue_version SET remark = ?, created_at = ? WHERE job_id = ? AND created_at = ? AND author = ?",
        );
        sqlx::query(&q)
            .bind(truncate_chars(&h.glue_remark, 128))
            .bind(h.glue_updated_at)
            .bind(id)
            .bind(now)
            .bind(author)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    /// Adds the job's earlier script versions it does not have yet; returns how many.
    async fn import_glue_versions_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        id: i64,
        glue_versions: &[ImportedGlueVersion],
        author: &str,
    ) -> StoreResult<usize> {
        if glue_versions.is_empty() {
            return Ok(0);
        }
        let q = self.sql("SELECT glue_type, glue_source, created_at FROM glue_version WHERE job_id = ?");
        let have: HashSet<(String, String, i64)> = sqlx::query(&q)
            .bind(id)
            .fetch_all(&mut **tx)
            .await?
            .iter()
            .map(|r| {
                Ok((
                    rows::text(r, "glue_type")?,
                    rows::text(r, "glue_source")?,
                    rows::int(r, "created_at")?,
                ))
            })
            .collect::<Result<_, sqlx::Error>>()?;
        let mut added = 0;
        for v in glue_versions {
            if have.contains(&(v.glue_type.clone(), v.glue_source.clone(), v.created_at)) {
                continue;
            }
            let q = self.sql(
                "INSERT INTO glue_version (job_id, glue_type, glue_source, author, remark, created_at) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            );
            sqlx::query(&q)
                .bind(id)
                .bind(&v.glue_type)
                .bind(&v.glue_source)
                .bind(author)
                .bind(truncate_chars(&v.remark, 128))
                .bind(v.created_at)
                .execute(&mut **tx)
                .await?;
            added += 1;
        }
        Ok(added)
    }

    /// Creates the users Chime does not have, and updates those it has only as an earlier
    /// import left them (a legacy hash: never logged in to Chime). A user who has logged in
    /// to Chime, or was made in Chime, is kept as Chime has it.
    async fn import_users(
        &self,
        tx: &mut Transaction<'static, Any>,
        bundle: &ImportBundle,
        applied: &Applied,
        now: i64,
    ) -> StoreResult<Vec<(String, Imported)>> {
        let mut out = Vec::new();
        for u in &bundle.users {
            let role = if u.admin { "admin" } else { "user" };
            let mut group_ids: Vec<i64> = u
                .groups
                .iter()
                .filter_map(|g| applied.group_ids.get(g).copied())
                .collect();
            group_ids.sort_unstable();
            group_ids.dedup();
            let q = self.sql_text(format!("SELECT {USER_COLUMNS} FROM app_user WHERE username = ?"));
            let existing = sqlx::query(&q).bind(&u.username).fetch_optional(&mut **tx).await?;
            let result = match existing.map(|r| user_row(&r)).transpose()? {
                None => {
                    let q = self.sql(
                        "INSERT INTO app_user (username, password_hash, role, can_write, group_ids, created_at) \
                         VALUES (?, ?, ?, 1, ?, ?)",
                    );
                    sqlx::query(&q)
                        .bind(&u.username)
                        .bind(&u.password_hash)
                        .bind(role)
                        .bind(rows::join_ids(&group_ids))
                        .bind(now)
                        .execute(&mut **tx)
                        .await?;
                    Imported::Created
                }
                Some(have) if !is_legacy_hash(&have.password_hash) => {
                    Imported::Kept("a Chime user of this name signs in with a Chime password; left as it is".to_owned())
                }
                Some(have) => {
                    let mut have_groups = have.group_ids.clone();
                    have_groups.sort_unstable();
                    if have.password_hash == u.password_hash
                        && have.role == role
                        && have.can_write
                        && have_groups == group_ids
                    {
                        Imported::Unchanged
                    } else {
                        let q = self.sql(
                            "UPDATE app_user SET password_hash = ?, role = ?, can_write = 1, group_ids = ? WHERE id = ?",
                        );
                        sqlx::query(&q)
                            .bind(&u.password_hash)
                            .bind(role)
                            .bind(rows::join_ids(&group_ids))
                            .bind(have.id)
                            .execute(&mut **tx)
                            .await?;
                        Imported::Updated
                    }
                }
            };
            out.push((u.username.clone(), result));
        }
        Ok(out)
    }

    /// Inserts the runs under their own ids. A run already there (same id, job and time) is
    /// given the source's result when it had none; an id another run holds is not imported.
    async fn import_runs(
        &self,
        tx: &mut Transaction<'static, Any>,
        bundle: &ImportBundle,
        applied: &Applied,
    ) -> StoreResult<RunCounts> {
        let mut counts = RunCounts::default();
        if bundle.runs.is_empty() {
            return Ok(counts);
        }
        let ids: Vec<i64> = bundle.runs.iter().map(|r| r.id).collect();
        let existing = self.runs_by_id_in(tx, &ids).await?;
        let mut new: Vec<(i64, i64, &ImportedRun)> = Vec::new();
        for r in &bundle.runs {
            let (Some(&job_id), Some(&group_id)) = (
                applied.job_ids.get(&(r.group.clone(), r.key.clone())),
                applied.group_ids.get(&r.group),
            ) else {
                counts
                    .skipped
                    .push((r.id, format!("its job {}/{} was not imported", r.group, r.key)));
                continue;
            };
            match existing.get(&r.id) {
                None => new.push((job_id, group_id, r)),
                Some(&(j, at, _)) if j != job_id || at != r.scheduled_at => counts
                    .skipped
                    .push((r.id, format!("run id {} is taken by another run in Chime", r.id))),
                Some(&(_, _, handle_code)) if handle_code == 0 && r.handle_code != 0 => {
                    self.record_imported_result_in(tx, r).await?;
                    counts.updated += 1;
                }
                Some(_) => counts.unchanged += 1,
            }
        }
        for chunk in new.chunks(RUN_CHUNK) {
            self.insert_imported_runs_in(tx, chunk).await?;
            counts.created += chunk.len();
        }
        Ok(counts)
    }

    /// The runs of these ids that Chime has: id → (job id, scheduled at, handle code).
    async fn runs_by_id_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        ids: &[i64],
    ) -> StoreResult<HashMap<i64, (i64, i64, i64)>> {
        let sql = "SELECT id, job_id, scheduled_at, handle_code FROM run WHERE id IN ({in})";
        self.fetch_in_as(tx, sql, ids, &[], |r| {
            let run = (
                rows::int(r, "job_id")?,
                rows::int(r, "scheduled_at")?,
                rows::int(r, "handle_code")?,
            );
            Ok((rows::int(r, "id")?, run))
        })
        .await
    }

    /// Gives a run Chime has without a result the source's result.
    async fn record_imported_result_in(&self, tx: &mut Transaction<'static, Any>, r: &ImportedRun) -> StoreResult<()> {
        let q = self.sql(
            "UPDATE run SET trigger_code = ?, trigger_msg = ?, handled_at = ?, handle_code = ?, handle_msg = ?, \
             alarm_status = ? WHERE id = ? AND handle_code = 0",
        );
        sqlx::query(&q)
            .bind(r.trigger_code)
            .bind(&r.trigger_msg)
            .bind(r.handled_at)
            .bind(r.handle_code)
            .bind(&r.handle_msg)
            .bind(r.alarm_status)
            .bind(r.id)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    /// Inserts runs Chime does not have, each with its job id and group id, in one statement.
    async fn insert_imported_runs_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        chunk: &[(i64, i64, &ImportedRun)],
    ) -> StoreResult<()> {
        let row = "(?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?)";
        let sql = format!(
            "INSERT INTO run (id, job_id, group_id, fire_key, scheduled_at, trigger_type, triggered_at, \
             executor_address, handler, param, shard_index, shard_total, retry_count, lineage, trigger_code, \
             trigger_msg, handled_at, handle_code, handle_msg, alarm_status, created_at) VALUES {}",
            vec![row; chunk.len()].join(", ")
        );
        let sql = self.sql(&sql).into_owned();
        let mut q = sqlx::query(&sql);
        for (job_id, group_id, r) in chunk {
            q = q
                .bind(r.id)
                .bind(*job_id)
                .bind(*group_id)
                .bind(r.scheduled_at)
                .bind(r.trigger_type.as_str())
                .bind(r.scheduled_at)
                .bind(&r.executor_address)
                .bind(&r.handler)
                .bind(&r.param)
                .bind(r.shard_index)
                .bind(r.shard_total)
                .bind(r.retry_count)
                .bind(r.trigger_code)
                .bind(&r.trigger_msg)
                .bind(r.handled_at)
                .bind(r.handle_code)
                .bind(&r.handle_msg)
                .bind(r.alarm_status)
                .bind(r.scheduled_at);
        }
        q.execute(&mut **tx).await?;
        Ok(())
    }

    /// Makes the ids of runs created from now on larger than `above` and than every run's, in
    /// `tx` where the engine can: SQLite keeps the counter in a table, PostgreSQL in a sequence
    /// that an insert with its own id does not move. MySQL's is raised after the commit
    /// ([`Store::raise_run_ids_after`]): changing it is DDL, which would commit the
    /// transaction.
    async fn raise_run_ids_tx(&self, tx: &mut Transaction<'static, Any>, above: i64) -> StoreResult<()> {
        match self.backend {
            Backend::Sqlite => {
                let q = "SELECT COUNT(*) AS n FROM sqlite_sequence WHERE name = 'run'";
                let known = rows::int(&sqlx::query(q).fetch_one(&mut **tx).await?, "n")? > 0;
                let q = if known {
                    "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'run'"
                } else {
                    "INSERT INTO sqlite_sequence (name, seq) VALUES ('run', ?)"
                };
                sqlx::query(q).bind(above).execute(&mut **tx).await?;
            }
            Backend::Postgres => {
                let q = "SELECT pg_get_serial_sequence('run', 'id') AS s";
                let seq = rows::text(&sqlx::query(q).fetch_one(&mut **tx).await?, "s")?;
                // The sequence's name comes from the database itself, not from any input.
                let q = format!(
                    "SELECT setval('{seq}', GREATEST($1, (SELECT COALESCE(MAX(id), 0) FROM run), \
                     (SELECT last_value FROM {seq}))) AS v"
                );
                sqlx::query(&q).bind(above).fetch_one(&mut **tx).await?;
            }
            Backend::MySql => {}
        }
        Ok(())
    }

    /// MySQL's part of [`Store::raise_run_ids_tx`], after the commit. Never lowers the counter
    /// below a run's id (MySQL raises a lower value to the largest id plus one).
    async fn raise_run_ids_after(&self, above: i64) -> StoreResult<()> {
        if self.backend != Backend::MySql || above <= 0 {
            return Ok(());
        }
        let max = rows::int(
            &sqlx::query("SELECT COALESCE(MAX(id), 0) AS m FROM run")
                .fetch_one(&self.write)
                .await?,
            "m",
        )?;
        if above >= max {
            // An integer, formatted: DDL takes no placeholders.
            sqlx::query(&format!("ALTER TABLE run AUTO_INCREMENT = {}", above + 1))
                .execute(&self.write)
                .await?;
        }
        Ok(())
    }
}

/// At most `max` characters of `s`.
fn truncate_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}
