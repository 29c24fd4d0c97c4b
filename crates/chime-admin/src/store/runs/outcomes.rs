//! Recording trigger results and run results, and creating the runs they cause, in one
//! transaction per batch. What an outcome causes is decided by `crate::follow_up`; this
//! reads the facts it needs and writes what it decides.
//!
//! This is the admin's busiest writer (a result and a trigger result per fire, tens of
//! thousands a second), so the common case is kept to a few multi-row statements: a run sent
//! and reported on successfully in the same batch gets both in one write, runs with a result
//! are first read briefly (job and current result, packed on SQLite), and full facts are read
//! only for the few outcomes that may cause a follow-up.

use super::UPDATE_ROWS;
use crate::follow_up::{self as plan, ChainRun, ResultPlan, RunFacts, RunState};
use crate::model::{now_ms, Job, SKIPPED_CODE};
use crate::run::{capped, HandleOutcome, NewRun, Recorded, RunPayload, RunTicket, TriggerOutcome, WrittenResult};
use crate::store::alarm_status;
use crate::store::bulk::sized_query;
use crate::store::rows;
use crate::store::{Store, StoreResult};
use chime_protocol::TriggerType;
use sqlx::any::{Any, AnyArguments};
use sqlx::query::Query;
use sqlx::AnyConnection;
use std::collections::{HashMap, HashSet};

/// The columns [`Store::run_facts`] reads, in [`RunFacts`]' order.
const FACT_COLUMNS: &str =
    "id, job_id, group_id, handler, param, shard_index, shard_total, retry_count, lineage, upstream, priority, concurrency_key";

/// The outcomes of a batch that the merged write does not take: `(merged, triggers, results)`.
type Split<'a> = (
    Vec<(&'a TriggerOutcome, &'a HandleOutcome)>,
    Vec<&'a TriggerOutcome>,
    Vec<&'a HandleOutcome>,
);

/// What a batch has decided and written so far, besides its reads.
#[derive(Debug, Default)]
struct Batch {
    /// Results seen written (for the workflow loop).
    written: Vec<WrittenResult>,
    /// Runs that failed for good.
    failed_for_good: Vec<i64>,
    /// Retries by the run they retry, to be created once its guard is won.
    retries: Vec<(i64, Vec<NewRun>)>,
    /// Child runs by their parent's run, likewise (after the retries).
    child_runs: Vec<(i64, Vec<NewRun>)>,
}

impl Batch {
    /// Plans the failed sends among `triggers` (`follow_up::plan_send`): retries, or a failure
    /// for good.
    fn plan_sends(&mut self, triggers: &[&TriggerOutcome], facts: &HashMap<i64, RunFacts>, now: i64) {
        for t in triggers.iter().filter(|t| t.code != 200) {
            let Some(f) = facts.get(&t.run_id) else { continue };
            let then = plan::plan_send(f, t, now);
            if then.failed_for_good {
                self.failed_for_good.push(t.run_id);
            }
            if !then.follow_ups.is_empty() {
                self.retries.push((t.run_id, then.follow_ups));
            }
        }
    }
}

/// Successes reported for runs the lost-run sweep failed, the first of each run.
fn late_successes<'a>(handles: &[&'a HandleOutcome], brief: &HashMap<i64, RunState<'_>>) -> Vec<&'a HandleOutcome> {
    let mut late_ids = HashSet::new();
    handles
        .iter()
        .copied()
        .filter(|h| brief.get(&h.run_id).is_some_and(|b| plan::is_late_success(*b, h)))
        .filter(|h| late_ids.insert(h.run_id))
        .collect()
}

/// The runs whose full facts a batch reads: of failed sends and failed runs (retries), of
/// successes with children, of late successes.
fn facts_needed(
    triggers: &[&TriggerOutcome],
    handles: &[&HandleOutcome],
    brief: &HashMap<i64, RunState<'_>>,
    parents: &HashMap<i64, Job>,
    late: &[&HandleOutcome],
) -> Vec<i64> {
    let mut ids: Vec<i64> = triggers.iter().filter(|t| t.code != 200).map(|t| t.run_id).collect();
    ids.extend(handles.iter().filter_map(|h| {
        let b = brief.get(&h.run_id)?;
        (b.handle_code == 0 && plan::needs_facts(h, parents.get(&b.job_id))).then_some(h.run_id)
    }));
    ids.extend(late.iter().map(|h| h.run_id));
    ids.sort_unstable();
    ids.dedup();
    ids
}

impl Store {
    /// Records trigger results and run results in one transaction, and creates the runs they
    /// cause (see [`Store::record_batch`]); returns those runs.
    pub async fn record_outcomes(
        &self,
        triggers: &[TriggerOutcome],
        handles: &[HandleOutcome],
    ) -> StoreResult<Vec<RunTicket>> {
        Ok(self.record_batch(triggers, handles).await?.follow_ups)
    }

    /// Records trigger results and run results in one transaction, and creates the runs they
    /// cause as `follow_up` decides: a retry for a failure while retries remain (same
    /// shard, one retry fewer), child jobs for a success. A result for a run that already has
    /// one changes nothing (the update is guarded by `handle_code = 0`), and follow-ups are
    /// guarded by `alarm_status`, so a repeated callback never retries or fires children twice.
    /// The exception is a success for a run the lost-run sweep failed: see
    /// [`Store::record_late_successes`]. Returns the runs created, the runs that failed for good
    /// and the retries withdrawn.
    pub async fn record_batch(&self, triggers: &[TriggerOutcome], handles: &[HandleOutcome]) -> StoreResult<Recorded> {
        if triggers.is_empty() && handles.is_empty() {
            return Ok(Recorded::default());
        }
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        // A run sent and already reported on when the writer gets to it, successfully, by a job
        // without children, needs nothing read and nothing followed up: its trigger result and
        // its result go into the row in one write. The busier the writer, the longer results
        // wait for it and the more runs take this way.
        let (merged, triggers, handles) = self.merge_simple_successes(&mut tx, triggers, handles).await?;
        let mut out = Batch {
            written: self.write_merged(&mut tx, &merged, now).await?,
            ..Batch::default()
        };
        self.write_trigger_results(&mut tx, &triggers).await?;
        let brief = self.brief_states(&mut tx, &handles).await?;
        let late = late_successes(&handles, &brief);
        // Children of jobs whose runs succeeded now. Only jobs that have children matter here;
        // reading just those keeps the common case (no children) to one cheap query.
        let success_jobs: Vec<i64> = handles
            .iter()
            .filter(|h| h.code == 200)
            .filter_map(|h| brief.get(&h.run_id))
            .map(|b| b.job_id)
            .collect::<HashSet<i64>>()
            .into_iter()
            .collect();
        let parents = self.jobs_with_children(&mut tx, &success_jobs).await?;
        let child_ids: Vec<i64> = parents.values().flat_map(|j| j.child_job_ids.iter().copied()).collect();
        let children: HashMap<i64, Job> = self.jobs_tx(&mut tx, &child_ids).await?;
        let ids = facts_needed(&triggers, &handles, &brief, &parents, &late);
        let facts = self.run_facts(&mut tx, &ids).await?;
        out.plan_sends(&triggers, &facts, now);
        let state = |id| {
            brief.get(&id).map(|b| RunState {
                facts: facts.get(&id),
                ..*b
            })
        };
        let plans = plan::plan_results(&handles, state, &parents, &children, now);
        self.write_results(&mut tx, plans, now, &mut out).await?;
        let (mut follow_ups, mut retry_of) = self.guard_follow_ups(&mut tx, out.retries, out.child_runs).await?;
        let settled = self
            .record_late_successes(&mut tx, &late, &facts, &parents, &children, now)
            .await?;
        retry_of.extend(std::iter::repeat_n(0, settled.children.len()));
        follow_ups.extend(settled.children);
        let tickets = self.insert_linked_runs_tx(&mut tx, &follow_ups, &retry_of).await?;
        tx.commit().await?;
        out.failed_for_good.sort_unstable();
        out.failed_for_good.dedup();
        Ok(Recorded {
            follow_ups: tickets,
            failed_for_good: out.failed_for_good,
            withdrawn: settled.withdrawn,
            written: out.written,
        })
    }

    /// Writes the trigger results and results of runs `merged` (sent and reported on
    /// successfully in the same batch) together, several per statement; returns the results
    /// seen written.
    async fn write_merged(
        &self,
        tx: &mut AnyConnection,
        merged: &[(&TriggerOutcome, &HandleOutcome)],
        now: i64,
    ) -> StoreResult<Vec<WrittenResult>> {
        let mut written = Vec::new();
        for chunk in merged.chunks(UPDATE_ROWS) {
            let q = self.backend.update_by_id(
                "run",
                &[TRIGGER_RESULT_COLUMNS, &["handled_at", "handle_code", "handle_msg"]].concat(),
                chunk.len(),
                "run.handle_code = 0",
            );
            let msgs: Vec<String> = chunk.iter().map(|(_, h)| plan::result_msg(h)).collect();
            let mut query = sized_query(&q, chunk.len() * (TRIGGER_RESULT_COLUMNS.len() + 4));
            for ((t, h), msg) in self.backend.padded(chunk).zip(self.backend.padded(&msgs)) {
                query = bind_trigger_result(query, t).bind(now).bind(h.code).bind(msg.as_str());
            }
            let done = query.execute(&mut *tx).await?;
            if done.rows_affected() == chunk.len() as u64 {
                let results = chunk.iter().zip(msgs).map(|((_, h), msg)| (h.run_id, h.code, msg));
                written.extend(results.map(|(run_id, code, msg)| WrittenResult {
                    run_id,
                    code,
                    msg,
                    at: now,
                }));
            } else {
                // Some run had a result already (a kill recorded first): the guard skipped its
                // whole row, but the trigger result must still be written. Writing the chunk's
                // trigger results again is the same values for the others.
                let only: Vec<&TriggerOutcome> = chunk.iter().map(|(t, _)| *t).collect();
                self.write_trigger_results(&mut *tx, &only).await?;
            }
        }
        Ok(written)
    }

    /// What recording a result needs of each run (job, current result), for every run with a
    /// result in `handles`, their rows locked. Most are successes of jobs without children,
    /// which need nothing more; facts are read only for the others.
    async fn brief_states(
        &self,
        tx: &mut AnyConnection,
        handles: &[&HandleOutcome],
    ) -> StoreResult<HashMap<i64, RunState<'static>>> {
        let mut handle_ids: Vec<i64> = handles.iter().map(|h| h.run_id).collect();
        handle_ids.sort_unstable();
        handle_ids.dedup();
        // (No `handle_msg`: a run's message is written only together with its result, so a run
        // still without one has none to append to. The exception is a callback reporting code 0,
        // which no XXL-JOB executor sends: the next result replaces its message.)
        let q = format!(
            "SELECT id, job_id, handle_code, lost_at FROM run WHERE id IN ({{in}}){}",
            self.backend.for_update()
        );
        let cols = ["id", "job_id", "handle_code", "lost_at"];
        Ok(self
            .int_rows_in(tx, &q, cols, &handle_ids)
            .await?
            .into_iter()
            .map(|[id, job_id, handle_code, lost_at]| {
                let state = RunState {
                    job_id,
                    handle_code,
                    lost_at,
                    facts: None,
                };
                (id, state)
            })
            .collect())
    }

    /// Writes the results `plans`: those that cause nothing together, several per statement;
    /// a result with follow-ups on its own, to see whether it was written (its follow-ups go
    /// into `out` if so), and so the lost-run sweep's verdict, with the time it was recorded
    /// (`lost_at`: the mark of a failure a late success may replace).
    async fn write_results(
        &self,
        tx: &mut AnyConnection,
        plans: Vec<ResultPlan>,
        now: i64,
        out: &mut Batch,
    ) -> StoreResult<()> {
        let mut plain: Vec<(i64, i64, String)> = Vec::with_capacity(plans.len());
        let q = self.sql(
            "UPDATE run SET handled_at = ?, handle_code = ?, handle_msg = ?, lost_at = ? WHERE id = ? AND handle_code = 0",
        );
        for p in plans {
            if p.then.failed_for_good {
                out.failed_for_good.push(p.run_id);
            }
            if p.then.follow_ups.is_empty() && !p.lost {
                plain.push((p.run_id, p.code, p.msg));
                continue;
            }
            let done = sqlx::query(&q)
                .bind(now)
                .bind(p.code)
                .bind(&p.msg)
                .bind(if p.lost { now } else { 0 })
                .bind(p.run_id)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 1 && !p.then.follow_ups.is_empty() {
                let to = if p.code == 200 {
                    &mut out.child_runs
                } else {
                    &mut out.retries
                };
                to.push((p.run_id, p.then.follow_ups));
            }
        }
        let written = self.write_plain_results(tx, plain, now).await?;
        out.written.extend(written);
        Ok(())
    }

    /// Writes results that cause nothing, several per statement; returns those seen written.
    async fn write_plain_results(
        &self,
        tx: &mut AnyConnection,
        plain: Vec<(i64, i64, String)>,
        now: i64,
    ) -> StoreResult<Vec<WrittenResult>> {
        // The chunks whose every row took its result (none had one before).
        let mut whole: Vec<bool> = Vec::with_capacity(plain.len().div_ceil(UPDATE_ROWS));
        for chunk in plain.chunks(UPDATE_ROWS) {
            let q = self.backend.update_by_id(
                "run",
                &["handled_at", "handle_code", "handle_msg"],
                chunk.len(),
                "run.handle_code = 0",
            );
            let mut query = sized_query(&q, chunk.len() * 4);
            for (id, code, msg) in self.backend.padded(chunk) {
                query = query.bind(*id).bind(now).bind(*code).bind(msg);
            }
            whole.push(query.execute(&mut *tx).await?.rows_affected() == chunk.len() as u64);
        }
        Ok(plain
            .into_iter()
            .enumerate()
            .filter(|(k, (_, code, _))| whole[k / UPDATE_ROWS] && *code != 0)
            .map(|(_, (run_id, code, msg))| WrittenResult {
                run_id,
                code,
                msg,
                at: now,
            })
            .collect())
    }

    /// Follow-ups, at most once per run: each run's are kept only when its guard
    /// (`alarm_status`) is won. A retry records the run it retries (`retry_of`), so each links
    /// to the other on the run pages; a child run retries nothing. Returns the runs and, for
    /// each, the run it retries (0: none).
    async fn guard_follow_ups(
        &self,
        tx: &mut AnyConnection,
        retries: Vec<(i64, Vec<NewRun>)>,
        child_runs: Vec<(i64, Vec<NewRun>)>,
    ) -> StoreResult<(Vec<NewRun>, Vec<i64>)> {
        let guard = self.sql("UPDATE run SET alarm_status = 1 WHERE id = ? AND alarm_status = 0");
        let mut follow_ups: Vec<NewRun> = Vec::new();
        let mut retry_of: Vec<i64> = Vec::new();
        let tagged = retries
            .into_iter()
            .map(|(id, runs)| (id, runs, id))
            .chain(child_runs.into_iter().map(|(id, runs)| (id, runs, 0)));
        for (id, runs, link) in tagged {
            if sqlx::query(&guard).bind(id).execute(&mut *tx).await?.rows_affected() == 1 {
                retry_of.extend(std::iter::repeat_n(link, runs.len()));
                follow_ups.extend(runs);
            }
        }
        Ok((follow_ups, retry_of))
    }

    /// Records the late successes `late` (`follow_up::is_late_success`: runs the lost-run
    /// sweep failed, reported successful after all) as `follow_up::plan_late_success`
    /// decides, in `tx`: the run becomes a success, unless a user killed it meanwhile — the
    /// guard of its write, which also makes a repeated report change nothing more; the retry
    /// chain its loss started is stopped: a retry not sent yet is withdrawn (skipped, its
    /// `alarm_status` set so that it causes nothing even if this admin's dispatcher sends it in
    /// the same instant), a retry on its way keeps running with its `alarm_status` set, so that
    /// its result makes no retry, fires no child and sends no alarm. Returns the child runs to
    /// create and the retries withdrawn.
    async fn record_late_successes(
        &self,
        tx: &mut AnyConnection,
        late: &[&HandleOutcome],
        facts: &HashMap<i64, RunFacts>,
        parents: &HashMap<i64, Job>,
        children: &HashMap<i64, Job>,
        now: i64,
    ) -> StoreResult<LateSettled> {
        let mut settled = LateSettled::default();
        if late.is_empty() {
            return Ok(settled);
        }
        let ids: Vec<i64> = late.iter().map(|h| h.run_id).collect();
        let in_workflow = self.in_workflow_chains(tx, &ids).await?;
        let chains = self.retry_chains(tx, &ids).await?;
        let won = self.sql(
            "UPDATE run SET handled_at = ?, handle_code = 200, handle_msg = ? \
             WHERE id = ? AND lost_at <> 0 AND handle_code <> 0 AND handle_code <> 200 AND killed_by = ''",
        );
        let withdraw = self.sql(
            "UPDATE run SET trigger_code = ?, trigger_msg = ?, alarm_status = ? \
             WHERE id = ? AND trigger_code = 0 AND send_token = 0 AND handle_code = 0",
        );
        let supersede = self.sql("UPDATE run SET alarm_status = ? WHERE id = ? AND alarm_status = ?");
        for h in late {
            let Some(run) = facts.get(&h.run_id) else { continue };
            let chain = chains.get(&h.run_id).map(Vec::as_slice).unwrap_or_default();
            let parent = parents.get(&run.job_id);
            let workflow = in_workflow.contains(&h.run_id);
            let Some(p) = plan::plan_late_success(run, chain, workflow, h, parent, children, now) else {
                continue;
            };
            let done = sqlx::query(&won)
                .bind(now)
                .bind(&p.msg)
                .bind(p.run_id)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() != 1 {
                continue;
            }
            let mut on_their_way = p.supersede;
            for id in p.withdraw {
                let done = sqlx::query(&withdraw)
                    .bind(SKIPPED_CODE)
                    .bind(plan::withdrawn_msg(p.run_id))
                    .bind(alarm_status::NOT_NEEDED)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() == 1 {
                    settled.withdrawn.push(id);
                } else {
                    on_their_way.push(id);
                }
            }
            for id in on_their_way {
                sqlx::query(&supersede)
                    .bind(alarm_status::NOT_NEEDED)
                    .bind(id)
                    .bind(alarm_status::NONE)
                    .execute(&mut *tx)
                    .await?;
            }
            tracing::info!(
                run_id = p.run_id,
                "a run failed as lost was reported successful after all: recorded as a success"
            );
            settled.children.extend(p.children);
        }
        Ok(settled)
    }

    /// Which of `ids` are runs of a workflow node: of type `WORKFLOW`, or retries descending
    /// from one (followed up `retry_of`, at most [`RETRY_CHAIN_MAX`] steps).
    async fn in_workflow_chains(&self, conn: &mut AnyConnection, ids: &[i64]) -> StoreResult<HashSet<i64>> {
        let mut found = HashSet::new();
        // Each run asked about → the run of its chain looked at now.
        let mut at: HashMap<i64, i64> = ids.iter().map(|id| (*id, *id)).collect();
        for _ in 0..=RETRY_CHAIN_MAX {
            if at.is_empty() {
                break;
            }
            let mut current: Vec<i64> = at.values().copied().collect();
            current.sort_unstable();
            current.dedup();
            let mut kind: HashMap<i64, (String, i64)> = HashMap::new();
            for r in self
                .fetch_in(
                    conn,
                    "SELECT id, trigger_type, retry_of FROM run WHERE id IN ({in})",
                    &current,
                    &[],
                )
                .await?
            {
                kind.insert(
                    rows::int(&r, "id")?,
                    (rows::text(&r, "trigger_type")?, rows::int(&r, "retry_of")?),
                );
            }
            at.retain(|asked, now_at| match kind.get(now_at) {
                Some((t, _)) if t == TriggerType::Workflow.as_str() => {
                    found.insert(*asked);
                    false
                }
                Some((t, of)) if t == TriggerType::Retry.as_str() && *of > 0 => {
                    *now_at = *of;
                    true
                }
                _ => false,
            });
        }
        Ok(found)
    }

    /// The retry chain after each of `ids` (its retry, that retry's retry, …, at most
    /// [`RETRY_CHAIN_MAX`] long), in order, locked for the batch.
    async fn retry_chains(&self, conn: &mut AnyConnection, ids: &[i64]) -> StoreResult<HashMap<i64, Vec<ChainRun>>> {
        let mut chains: HashMap<i64, Vec<ChainRun>> = HashMap::new();
        // The last run of each chain so far → the run the chain follows.
        let mut tips: HashMap<i64, i64> = ids.iter().map(|id| (*id, *id)).collect();
        let q = format!(
            "SELECT id, retry_of, trigger_code, handle_code, send_token FROM run WHERE retry_of IN ({{in}}) ORDER BY id{}",
            self.backend.for_update()
        );
        let cols = ["id", "retry_of", "trigger_code", "handle_code", "send_token"];
        for _ in 0..RETRY_CHAIN_MAX {
            if tips.is_empty() {
                break;
            }
            let mut from: Vec<i64> = tips.keys().copied().collect();
            from.sort_unstable();
            let mut next = HashMap::new();
            for [id, of, trigger_code, handle_code, send_token] in self.int_rows_in(conn, &q, cols, &from).await? {
                let Some(origin) = tips.get(&of) else { continue };
                chains.entry(*origin).or_default().push(ChainRun {
                    id,
                    trigger_code,
                    handle_code,
                    marked: send_token != 0,
                });
                next.insert(id, *origin);
            }
            tips = next;
        }
        Ok(chains)
    }

    /// Writes trigger results, one multi-row UPDATE per chunk: per-row statements made the
    /// writer the bottleneck at ten thousand fires per second.
    async fn write_trigger_results(&self, conn: &mut AnyConnection, triggers: &[&TriggerOutcome]) -> StoreResult<()> {
        for chunk in triggers.chunks(UPDATE_ROWS) {
            let q = self
                .backend
                .update_by_id("run", TRIGGER_RESULT_COLUMNS, chunk.len(), "");
            let mut query = sized_query(&q, chunk.len() * (TRIGGER_RESULT_COLUMNS.len() + 1));
            for t in self.backend.padded(chunk) {
                query = bind_trigger_result(query, t);
            }
            query.execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// Splits a batch into the runs whose trigger result (code 200) and successful result
    /// are both in it, for jobs without children, and the outcomes left. A run reported on
    /// twice in the batch stays with the rest, which records only the first result.
    async fn merge_simple_successes<'a>(
        &self,
        conn: &mut AnyConnection,
        triggers: &'a [TriggerOutcome],
        handles: &'a [HandleOutcome],
    ) -> StoreResult<Split<'a>> {
        let sent: HashMap<i64, &TriggerOutcome> = triggers
            .iter()
            .filter(|t| t.code == 200)
            .map(|t| (t.run_id, t))
            .collect();
        let mut reports: HashMap<i64, usize> = HashMap::new();
        for h in handles {
            *reports.entry(h.run_id).or_default() += 1;
        }
        let candidates: Vec<(&TriggerOutcome, &HandleOutcome)> = handles
            .iter()
            .filter(|h| h.code == 200 && reports[&h.run_id] == 1)
            .filter_map(|h| sent.get(&h.run_id).map(|t| (*t, h)))
            .collect();
        if candidates.is_empty() {
            return Ok((Vec::new(), triggers.iter().collect(), handles.iter().collect()));
        }
        let job_ids: Vec<i64> = candidates
            .iter()
            .map(|(t, _)| t.job_id)
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let parents = self.jobs_with_children(conn, &job_ids).await?;
        let merged: Vec<(&TriggerOutcome, &HandleOutcome)> = candidates
            .into_iter()
            .filter(|(t, h)| !plan::needs_facts(h, parents.get(&t.job_id)))
            .collect();
        let taken: HashSet<i64> = merged.iter().map(|(t, _)| t.run_id).collect();
        let triggers = triggers.iter().filter(|t| !taken.contains(&t.run_id)).collect();
        let handles = handles.iter().filter(|h| !taken.contains(&h.run_id)).collect();
        Ok((merged, triggers, handles))
    }

    /// The jobs among `ids` that have children, by id.
    async fn jobs_with_children(&self, conn: &mut AnyConnection, ids: &[i64]) -> StoreResult<HashMap<i64, Job>> {
        self.jobs_where(conn, "child_job_ids <> '' AND", ids).await
    }

    /// The [`RunFacts`] of the runs `ids` (sorted, without duplicates), locked for the batch.
    async fn run_facts(&self, conn: &mut AnyConnection, ids: &[i64]) -> StoreResult<HashMap<i64, RunFacts>> {
        let q = format!(
            "SELECT {FACT_COLUMNS} FROM run WHERE id IN ({{in}}){}",
            self.backend.for_update()
        );
        let mut out = HashMap::with_capacity(ids.len());
        for r in self.fetch_in(conn, &q, ids, &[]).await? {
            // By position, in FACT_COLUMNS' order.
            let f = RunFacts {
                id: rows::int(&r, 0)?,
                job_id: rows::int(&r, 1)?,
                group_id: rows::int(&r, 2)?,
                payload: RunPayload {
                    handler: rows::text(&r, 3)?,
                    param: rows::text(&r, 4)?,
                    shard_index: rows::int(&r, 5)?,
                    shard_total: rows::int(&r, 6)?,
                    retry_count: rows::int(&r, 7)?,
                    lineage: rows::text(&r, 8)?,
                    upstream: rows::text(&r, 9)?,
                    flow: rows::run_flow(&r, 10)?,
                },
            };
            out.insert(f.id, f);
        }
        Ok(out)
    }
}

/// The longest retry chain followed: a run has at most 100 retries (`JobSpec::validate`), and
/// one more step finds the run that started the chain.
const RETRY_CHAIN_MAX: usize = 101;

/// What [`Store::record_late_successes`] leaves to create and to tell the dispatcher.
#[derive(Debug, Default)]
struct LateSettled {
    /// Child runs of the runs that succeeded late.
    children: Vec<NewRun>,
    /// Retries withdrawn.
    withdrawn: Vec<i64>,
}

/// The columns a trigger result sets, in the order `bind_trigger_result` binds them (after the
/// run id that `update_by_id` keys on).
const TRIGGER_RESULT_COLUMNS: &[&str] = &[
    "triggered_at",
    "executor_address",
    "trigger_code",
    "trigger_msg",
    "shard_total",
    "trigger_type",
];

/// Binds one run's id and trigger result for an `update_by_id` over `TRIGGER_RESULT_COLUMNS`.
fn bind_trigger_result<'q>(
    query: Query<'q, Any, AnyArguments<'q>>,
    t: &'q TriggerOutcome,
) -> Query<'q, Any, AnyArguments<'q>> {
    query
        .bind(t.run_id)
        .bind(t.triggered_at)
        .bind(t.address.as_str())
        .bind(t.code)
        .bind(capped(&t.msg))
        .bind(t.shard_total)
        .bind(t.trigger_type.as_str())
}

/// Longest `killed_by` stored (the column's size).
pub(super) const KILLED_BY_CHARS: usize = 128;

impl Store {
    /// Records that `by`'s kill of `run_id` was accepted by its executor, unless the run
    /// succeeded first (then the kill changed nothing). Called after the kill's result is
    /// recorded: the executor's own report of the kill may have come first, and it counts
    /// too. Returns whether the run is now marked.
    pub async fn mark_killed(&self, run_id: i64, by: &str) -> StoreResult<bool> {
        let by: String = by.chars().take(KILLED_BY_CHARS).collect();
        // An empty name would read as "not killed".
        let by = if by.is_empty() { "api".to_owned() } else { by };
        let q = self.sql("UPDATE run SET killed_by = ? WHERE id = ? AND handle_code <> 0 AND handle_code <> 200");
        let done = sqlx::query(&q).bind(by).bind(run_id).execute(&self.write).await?;
        Ok(done.rows_affected() == 1)
    }
}
