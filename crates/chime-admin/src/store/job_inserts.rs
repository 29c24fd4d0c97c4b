//! Group commit for creating jobs: creates that arrive while the writer is busy go into the
//! database together, in one transaction, and each caller still gets its own answer.
//!
//! A create is a few statements (the group's check, the insert, its key and partition) and a
//! commit; on SQLite every write goes through the one writer connection, where each statement
//! is a hand-over to the database's thread, and the creates queued behind each other and behind
//! the scheduler's own writes. Eight clients creating jobs while thousands of jobs fire got
//! about 1,200 creates a second that way.
//!
//! Here the first create of a round starts a committer and waits with the others; the
//! committer takes the writer and then takes every create that queued meanwhile. The batch
//! checks its groups in one statement, inserts each job, sets the new rows' keys and partitions
//! in one statement and commits once. What a create alone gets wrong (a group or child job
//! that does not exist) is answered to that caller and never reaches the batch; a write that
//! fails (a key its group already has) rolls the batch back, and its creates are then made one
//! transaction each, so every caller gets its own result or its own error and no create fails
//! because of a neighbour.

use super::audit::NewAuditEntry;
use super::job_columns::JOB_COLUMNS;
use super::rounds::{Rounds, Waiting};
use super::rows;
use super::{Store, StoreError, StoreResult};
use crate::model::{now_ms, Invalid, Job, JobDraft};
use sqlx::any::Any;
use sqlx::Transaction;
use std::collections::{HashMap, HashSet};

/// Creates waiting for the committer of their round.
pub(super) type PendingInserts = Rounds<InsertRequest>;

/// One create waiting for its round, answered with the new job as stored.
pub(super) type InsertRequest = Waiting<NewJob, StoreResult<Job>>;

/// What a create asks for.
pub(super) struct NewJob {
    draft: JobDraft,
    author: String,
    /// The audit entry of the create, written in its transaction.
    audit: Option<NewAuditEntry>,
}

impl Store {
    /// Creates a job (and its first script version), starting it when the draft says so, and
    /// returns it as stored. Committed together with the creates that arrive meanwhile (see
    /// the module's documentation).
    pub(super) async fn insert_job_grouped(
        &self,
        draft: &JobDraft,
        author: &str,
        audit: Option<NewAuditEntry>,
    ) -> StoreResult<Job> {
        let job = NewJob {
            draft: draft.clone(),
            author: author.to_owned(),
            audit,
        };
        self.join_round(&self.pending_inserts, job, Store::commit_pending_inserts)
            .await
    }

    /// One round: takes the writer, then every create queued by then, and commits them.
    async fn commit_pending_inserts(self) {
        let (tx, batch) = self.begin_round(&self.pending_inserts).await;
        let mut tx = match tx {
            Ok(tx) => tx,
            Err(_) => return self.insert_each_alone(batch).await,
        };
        let now = now_ms();
        let batch = match self.reject_invalid(&mut tx, batch).await {
            Ok(valid) => valid,
            Err((_, batch)) => return self.insert_each_alone(batch).await,
        };
        match self.insert_batch(&mut tx, &batch, now).await {
            Ok(jobs) => match tx.commit().await {
                Ok(()) => batch.into_iter().zip(jobs).for_each(|(r, job)| r.answer(Ok(job))),
                Err(_) => self.insert_each_alone(batch).await,
            },
            Err(_) => {
                drop(tx);
                self.insert_each_alone(batch).await
            }
        }
    }

    /// Answers the creates whose group or child jobs do not exist (read-only checks, so the
    /// batch's transaction is untouched) and returns the others. A database failure returns
    /// the whole batch for the one-at-a-time path.
    async fn reject_invalid(
        &self,
        tx: &mut Transaction<'static, Any>,
        batch: Vec<InsertRequest>,
    ) -> Result<Vec<InsertRequest>, (StoreError, Vec<InsertRequest>)> {
        let mut group_ids: Vec<i64> = batch.iter().map(|r| r.request.draft.group_id).collect();
        group_ids.sort_unstable();
        group_ids.dedup();
        let groups: HashSet<i64> = match self
            .fetch_in(tx, "SELECT id FROM executor_group WHERE id IN ({in})", &group_ids, &[])
            .await
            .and_then(|found| {
                found
                    .iter()
                    .map(|r| rows::int(r, "id").map_err(StoreError::from))
                    .collect()
            }) {
            Ok(groups) => groups,
            Err(e) => return Err((e, batch)),
        };
        let mut valid = Vec::with_capacity(batch.len());
        let mut pending = batch.into_iter();
        while let Some(request) = pending.next() {
            let id = request.request.draft.group_id;
            if !groups.contains(&id) {
                request.answer(Err(Invalid::new(
                    "group_id",
                    format!("executor group {id} does not exist"),
                )
                .into()));
                continue;
            }
            match self
                .check_children(tx, None, &request.request.draft.child_job_ids)
                .await
            {
                Ok(()) => valid.push(request),
                Err(StoreError::Invalid(invalid)) => request.answer(Err(invalid.into())),
                Err(e) => {
                    valid.push(request);
                    valid.extend(pending);
                    return Err((e, valid));
                }
            }
        }
        Ok(valid)
    }

    /// Writes the batch's jobs in `tx` and reads them back in one statement (each caller
    /// answers with its job as stored, so none reads it again after the commit); in the
    /// batch's order.
    async fn insert_batch(
        &self,
        tx: &mut Transaction<'static, Any>,
        batch: &[InsertRequest],
        now: i64,
    ) -> StoreResult<Vec<Job>> {
        let mut ids = Vec::with_capacity(batch.len());
        for request in batch {
            let draft = &request.request.draft;
            let id = self.insert_job_row(tx, draft.group_id, draft, now).await?;
            if draft.glue_type.is_script() {
                self.insert_glue_version(tx, id, draft, &request.request.author, now)
                    .await?;
            }
            ids.push(id);
        }
        self.name_new_jobs(tx, &ids).await?;
        self.insert_audit_rows(tx, batch.iter().filter_map(|r| r.request.audit.as_ref()))
            .await?;
        let sql = format!("SELECT {JOB_COLUMNS} FROM job WHERE id IN ({{in}})");
        let mut stored: HashMap<i64, Job> = self
            .fetch_in_as(tx, &sql, &ids, &[], |row| rows::job(row).map(|job| (job.id, job)))
            .await?;
        ids.iter()
            .map(|id| {
                stored
                    .remove(id)
                    .ok_or_else(|| StoreError::NotFound(format!("job {id}")))
            })
            .collect()
    }

    /// The one-at-a-time path: each create in its own transaction, with its own answer.
    async fn insert_each_alone(&self, batch: Vec<InsertRequest>) {
        for request in batch {
            let new = &request.request;
            let result = match self.insert_job_alone(&new.draft, &new.author, new.audit.as_ref()).await {
                Ok(id) => self.job(id).await,
                Err(e) => Err(e),
            };
            request.answer(result);
        }
    }
}
