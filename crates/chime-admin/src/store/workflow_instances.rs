//! The rows of workflow instances that a step writes and reads besides its decisions: new
//! instances (one at a time where a concurrency limit counts, several per statement where
//! none does), node rows inserted with their ids known, and how node runs ended.
//!
//! On SQLite nothing written is read back (`store/sqlite_ids.rs`) and what is read comes packed
//! into one value (`store/bulk.rs`): the driver hands each result row from its worker thread to
//! the async side on its own, and a step's rows sent that way cost more than writing them.

use super::rows::{self, from_row};
use super::sqlite_ids::{IdCursor, KNOWN_IDS};
use super::{Backend, Store, StoreError, StoreResult};
use crate::workflow::dag::InstanceState;
use crate::workflow::spec::{OnLimit, Workflow};
use crate::workflow::step::RunEnd;
use chime_protocol::TriggerType;
use sqlx::any::Any;
use sqlx::Transaction;
use std::collections::HashMap;

/// New instances inserted per multi-row statement.
const INSTANCE_ROWS: usize = 500;

impl Store {
    /// Creates an instance of `w`'s current graph (none when `fire_key` made one already):
    /// running, or queued or skipped at the workflow's concurrency limit. Its first nodes are
    /// the caller's to start.
    pub(super) async fn create_instance(
        &self,
        tx: &mut Transaction<'static, Any>,
        w: &Workflow,
        fire_key: Option<i64>,
        scheduled_at: i64,
        trigger_type: TriggerType,
        now: i64,
    ) -> StoreResult<Made> {
        if let Some(key) = fire_key {
            let q = self.sql("SELECT id FROM workflow_instance WHERE workflow_id = ? AND fire_key = ?");
            if let Some(r) = sqlx::query(&q).bind(w.id).bind(key).fetch_optional(&mut **tx).await? {
                return Ok(Made {
                    id: rows::int(&r, "id")?,
                    started: false,
                });
            }
        }
        let mut state = InstanceState::Running;
        if w.max_instances > 0 {
            let q = self.sql("SELECT COUNT(*) AS n FROM workflow_instance WHERE workflow_id = ? AND state = 'running'");
            let running = rows::int(&sqlx::query(&q).bind(w.id).fetch_one(&mut **tx).await?, "n")?;
            if running >= w.max_instances {
                state = match w.on_limit {
                    OnLimit::Skip => InstanceState::Skipped,
                    OnLimit::Queue => InstanceState::Queued,
                };
            }
        }
        let q = self.sql(
            "INSERT INTO workflow_instance (workflow_id, fire_key, scheduled_at, trigger_type, state, version_id, \
             created_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(w.id)
            .bind(fire_key)
            .bind(scheduled_at)
            .bind(trigger_type.as_str())
            .bind(state.as_str())
            .bind(w.version)
            .bind(now)
            .bind(if state == InstanceState::Skipped { now } else { 0 })
            .fetch_one(&mut **tx)
            .await?;
        Ok(Made {
            id: rows::int(&row, 0)?,
            started: state == InstanceState::Running,
        })
    }

    /// Creates the running instances of fires `made` of workflows without a concurrency limit
    /// (`due`: the workflows with their graphs as stored), several per statement; a fire made
    /// before (the same `(workflow_id, fire_key)`) is skipped by the unique key. Returns the new
    /// instances' ids with their fires.
    pub(super) async fn create_instances<'m, G>(
        &self,
        tx: &mut Transaction<'static, Any>,
        due: &[(Workflow, G)],
        made: &'m [NewInstance],
        now: i64,
    ) -> StoreResult<Vec<(i64, &'m NewInstance)>> {
        let (prefix, suffix) = self.backend.insert_ignore();
        let sqlite = self.backend == Backend::Sqlite;
        let mut out = Vec::with_capacity(made.len());
        let mut cursor = IdCursor::new("workflow_instance");
        for (_, chunk) in self.backend.insert_slices(made, INSTANCE_ROWS) {
            let q = format!(
                "{prefix} INTO workflow_instance (workflow_id, fire_key, scheduled_at, trigger_type, state, version_id, \
                 created_at, finished_at) VALUES {}{suffix}{}",
                vec!["(?, ?, ?, ?, 'running', ?, ?, 0)"; chunk.len()].join(", "),
                if sqlite { KNOWN_IDS } else { " RETURNING id, workflow_id, fire_key" }
            );
            let q = self.sql(&q).into_owned();
            let mut query = sqlx::query(&q);
            let mut by_key: HashMap<(i64, i64), &NewInstance> = HashMap::with_capacity(chunk.len());
            for m in chunk {
                let (w, _) = &due[m.due];
                by_key.insert((w.id, m.fire_key), m);
                query = query
                    .bind(w.id)
                    .bind(m.fire_key)
                    .bind(m.scheduled_at)
                    .bind(m.trigger_type.as_str())
                    .bind(w.version)
                    .bind(now);
            }
            // As the node rows' (`insert_node_rows`): SQLite's ids are known (`store/sqlite_ids.rs`)
            // unless a fire was made before; only then are the new rows read back.
            let inserted: Vec<[i64; 3]> = if sqlite {
                let done = self.insert_known_ids(tx, &mut cursor, query, chunk.len()).await?;
                if let Some(ids) = done.ids {
                    chunk
                        .iter()
                        .zip(ids)
                        .map(|(m, id)| [id, due[m.due].0.id, m.fire_key])
                        .collect()
                } else {
                    let q = "SELECT id, workflow_id, fire_key FROM workflow_instance WHERE id > ?";
                    self.int_rows(tx, q, ["id", "workflow_id", "fire_key"], &[done.before])
                        .await?
                }
            } else {
                let mut ids = Vec::with_capacity(chunk.len());
                // By position: MariaDB names the columns of a RETURNING list otherwise.
                for r in query.fetch_all(&mut **tx).await? {
                    ids.push([rows::int(&r, 0)?, rows::int(&r, 1)?, rows::int(&r, 2)?]);
                }
                ids
            };
            for [id, workflow_id, fire_key] in inserted {
                let m = by_key.get(&(workflow_id, fire_key)).ok_or_else(|| {
                    StoreError::Conflict(format!("instance {id} of workflow {workflow_id} came back unasked"))
                })?;
                out.push((id, *m));
            }
        }
        Ok(out)
    }

    /// Runs `query`, the insert of node rows `keys` (instance, node: unique), and returns
    /// their ids in `keys`' order. On SQLite the ids are known without reading the rows back
    /// (`store/sqlite_ids.rs`; `cursor` carries them from one insert of a step to the next);
    /// elsewhere the insert ends in `RETURNING id, instance_id, node`, checked against `keys`.
    pub(super) async fn insert_node_rows<'q>(
        &self,
        tx: &mut Transaction<'static, Any>,
        cursor: &mut IdCursor,
        query: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
        keys: &[(i64, String)],
    ) -> StoreResult<Vec<i64>> {
        let short = |n: usize| StoreError::Conflict(format!("{n} of {} workflow node rows were written", keys.len()));
        let found = if self.backend == Backend::Sqlite {
            let done = self.insert_known_ids(tx, cursor, query, keys.len()).await?;
            if done.written != keys.len() {
                return Err(short(done.written));
            }
            if let Some(ids) = done.ids {
                return Ok(ids.collect());
            }
            let q = "SELECT id, instance_id, node FROM workflow_node_run WHERE id > ?";
            sqlx::query(q).bind(done.before).fetch_all(&mut **tx).await?
        } else {
            query.fetch_all(&mut **tx).await?
        };
        let mut ids: HashMap<(i64, String), i64> = HashMap::with_capacity(keys.len());
        // By position: MariaDB names the columns of a RETURNING list otherwise.
        for r in found {
            ids.insert((rows::int(&r, 1)?, rows::text(&r, 2)?), rows::int(&r, 0)?);
        }
        if ids.len() != keys.len() {
            return Err(short(ids.len()));
        }
        keys.iter()
            .map(|k| {
                ids.get(k)
                    .copied()
                    .ok_or_else(|| StoreError::Conflict(format!("node row '{}' came back unasked", k.1)))
            })
            .collect()
    }

    /// How the runs `ids` ended so far (those that still exist).
    pub(super) async fn run_ends(&self, tx: &mut Transaction<'static, Any>, ids: &[i64]) -> StoreResult<Vec<RunEnd>> {
        let q =
            "SELECT id, trigger_code, handle_code, handle_msg, handled_at, triggered_at FROM run WHERE id IN ({in})";
        let cols = [
            "id",
            "trigger_code",
            "handle_code",
            "handle_msg",
            "handled_at",
            "triggered_at",
        ];
        self.packed_rows_in(tx, q, &cols, ids, |r| {
            Ok(from_row!(r => RunEnd { id, trigger_code, handle_code, handle_msg, handled_at, triggered_at }))
        })
        .await
    }
}

/// A fire of a workflow without a concurrency limit, to become a running instance
/// ([`Store::create_instances`]).
#[derive(Debug)]
pub(super) struct NewInstance {
    /// Its workflow's place among the due ones.
    pub(super) due: usize,
    /// Its fire time's key (unique per workflow).
    pub(super) fire_key: i64,
    /// Its fire time.
    pub(super) scheduled_at: i64,
    /// Why it fired.
    pub(super) trigger_type: TriggerType,
}

/// An instance of a fire: its id, and whether it is new and running (not queued or skipped,
/// and not made before), so its first nodes are to be started now.
#[derive(Debug)]
pub(super) struct Made {
    /// The instance's id.
    pub(super) id: i64,
    /// Whether its first nodes are to be started now.
    pub(super) started: bool,
}
