//! Decoding the rows of workflows, their instances and their nodes, shared by the queries and
//! operator changes (`workflows.rs`), the engine's steps (`workflow_steps.rs`) and applying a
//! jobs document (`apply_workflows.rs`).

use super::rows;
use crate::workflow::dag::{Definition, InstanceState, NodeState};
use crate::workflow::spec::{Instance, NodeRun, OnLimit, Workflow};
use sqlx::any::AnyRow;

/// A workflow's columns but its graph (`definition`).
macro_rules! workflow_fields {
    () => {
        "id, name, description, partition_no, schedule_type, schedule_expr, time_zone, \
         misfire_strategy, max_instances, on_limit, alarm_channels, version_id, running, anchor_at, \
         next_fire_at, last_fire_at, created_at, updated_at, paused_until, calendar, \
         (SELECT spec FROM business_calendar WHERE business_calendar.name = workflow.calendar) AS calendar_spec"
    };
}

/// A workflow's columns but its graph, for [`workflow_row_with`]: firing reads each graph
/// once per version, not once per fire.
pub(super) const WORKFLOW_FIELDS: &str = workflow_fields!();

/// A workflow's columns, for [`workflow_row`].
pub(super) const WORKFLOW_COLUMNS: &str = concat!(workflow_fields!(), ", definition");

/// An instance's columns, with its graph from its version, selected from [`INSTANCE_FROM`].
///
/// The graph is a subquery by primary key, not a join: a query over instances stays a query
/// of one table, whose index each engine picks alone (MariaDB, joining, started from the few
/// versions and sorted every instance a list matched), and a locking read of an instance
/// locks that row only, not its version's, which its sibling instances share.
pub(super) const INSTANCE_COLUMNS: &str = "i.id AS id, i.workflow_id AS workflow_id, i.scheduled_at AS scheduled_at, \
     i.trigger_type AS trigger_type, i.state AS state, \
     (SELECT v.definition FROM workflow_version v WHERE v.id = i.version_id) AS definition, \
     i.version_id AS version_id, i.stopped_by AS stopped_by, i.created_at AS created_at, i.finished_at AS finished_at";

/// Instances (`i`).
pub(super) const INSTANCE_FROM: &str = "workflow_instance i";

fn decode_err(col: &str, e: impl std::fmt::Display) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: col.to_owned(),
        source: e.to_string().into(),
    }
}

fn definition(row: &AnyRow) -> Result<Definition, sqlx::Error> {
    serde_json::from_str(&rows::text(row, "definition")?).map_err(|e| decode_err("definition", e))
}

pub(super) fn workflow_row(row: &AnyRow) -> Result<Workflow, sqlx::Error> {
    workflow_row_with(row, definition(row)?)
}

/// A workflow row with its graph `definition`, parsed elsewhere.
pub(super) fn workflow_row_with(row: &AnyRow, definition: Definition) -> Result<Workflow, sqlx::Error> {
    Ok(Workflow {
        id: rows::int(row, "id")?,
        name: rows::text(row, "name")?,
        description: rows::text(row, "description")?,
        partition: rows::int(row, "partition_no")?,
        schedule_type: rows::text(row, "schedule_type")?
            .parse()
            .map_err(|e| decode_err("schedule_type", e))?,
        schedule_expr: rows::text(row, "schedule_expr")?,
        time_zone: rows::text(row, "time_zone")?,
        misfire_strategy: rows::text(row, "misfire_strategy")?
            .parse()
            .map_err(|e| decode_err("misfire_strategy", e))?,
        calendar: rows::text(row, "calendar")?,
        business_days: rows::business_days(rows::opt_text(row, "calendar_spec")?),
        max_instances: rows::int(row, "max_instances")?,
        on_limit: OnLimit::parse(&rows::text(row, "on_limit")?),
        alarm_channels: rows::text(row, "alarm_channels")?,
        definition,
        version: rows::int(row, "version_id")?,
        running: rows::int(row, "running")? != 0,
        anchor_at: rows::int(row, "anchor_at")?,
        next_fire_at: rows::int(row, "next_fire_at")?,
        paused_until: rows::int(row, "paused_until")?,
        last_fire_at: rows::int(row, "last_fire_at")?,
        created_at: rows::int(row, "created_at")?,
        updated_at: rows::int(row, "updated_at")?,
    })
}

pub(super) fn instance_row(row: &AnyRow) -> Result<Instance, sqlx::Error> {
    Ok(Instance {
        id: rows::int(row, "id")?,
        workflow_id: rows::int(row, "workflow_id")?,
        scheduled_at: rows::int(row, "scheduled_at")?,
        trigger_type: rows::text(row, "trigger_type")?,
        state: InstanceState::parse(&rows::text(row, "state")?).ok_or_else(|| decode_err("state", "unknown"))?,
        stopped_by: rows::text(row, "stopped_by")?,
        created_at: rows::int(row, "created_at")?,
        finished_at: rows::int(row, "finished_at")?,
        definition: definition(row)?,
        version: rows::int(row, "version_id")?,
        nodes: Vec::new(),
    })
}

pub(super) fn node_row(row: &AnyRow) -> Result<NodeRun, sqlx::Error> {
    Ok(NodeRun {
        node: rows::text(row, "node")?,
        state: NodeState::parse(&rows::text(row, "state")?).ok_or_else(|| decode_err("state", "unknown"))?,
        run_id: rows::int(row, "run_id")?,
        result: rows::text(row, "result")?,
        started_at: rows::int(row, "started_at")?,
        finished_at: rows::int(row, "finished_at")?,
    })
}
