//! Backfills on the wire: a job or a workflow run once for every fire time its schedule had in
//! a past range ([`BackfillSpec`] asks for one, [`Backfill`] shows it and how far it got).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `POST /v1/jobs/{id}/backfills` and `POST /v1/workflows/{id}/backfills` take.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackfillSpec {
    /// The range's first instant, epoch ms: a fire time at it is included.
    pub from: i64,
    /// The range's last instant, epoch ms: a fire time at it is included; not in the future,
    /// at most 366 days after `from`.
    pub to: i64,
    /// At most this many of its runs (a workflow's: instances) under way at once, 1..100
    /// (default 1: one after the other).
    #[serde(default)]
    pub at_once: Option<i64>,
    /// Newest fire times first (default: oldest first).
    #[serde(default)]
    pub newest_first: Option<bool>,
}

/// Where a backfill stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BackfillState {
    /// Fire times are still waiting or running.
    Running,
    /// Every fire time it took on has run.
    Done,
    /// Cancelled: its waiting fire times were let go; its runs under way went on.
    Cancelled,
}

impl BackfillState {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            BackfillState::Running => "running",
            BackfillState::Done => "done",
            BackfillState::Cancelled => "cancelled",
        }
    }

    /// As read back (an unknown value reads as done).
    pub(crate) fn parse(text: &str) -> BackfillState {
        match text {
            "running" => BackfillState::Running,
            "cancelled" => BackfillState::Cancelled,
            _ => BackfillState::Done,
        }
    }
}

/// A backfill and how far it got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Backfill {
    /// Backfill id.
    pub id: i64,
    /// The job it runs (`null` for a workflow's).
    pub job_id: Option<i64>,
    /// The workflow it fires (`null` for a job's).
    pub workflow_id: Option<i64>,
    /// The range's first instant, epoch ms (a fire at it is included).
    pub from: i64,
    /// The range's last instant, epoch ms (a fire at it is included).
    pub to: i64,
    /// At most this many of its runs (a workflow's: instances) under way at once.
    pub at_once: i64,
    /// Whether the newest fire times go first.
    pub newest_first: bool,
    /// Where it stands.
    pub state: BackfillState,
    /// The fire times it took on.
    pub fires: i64,
    /// Fire times of the range left out: another backfill took them on before.
    pub already: i64,
    /// Fire times not started yet.
    pub waiting: i64,
    /// Runs (instances) started and not ended: pending, queued or running.
    pub running: i64,
    /// Runs (instances) that succeeded.
    pub succeeded: i64,
    /// Runs (instances) that ended otherwise: failed, killed, stopped, skipped, or removed by
    /// retention.
    pub failed: i64,
    /// Who asked for it.
    pub created_by: String,
    /// When, epoch ms.
    pub created_at: i64,
    /// When it was done or cancelled, epoch ms; `None` while running.
    pub ended_at: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::BackfillState;

    #[test]
    fn states_read_back_as_written() {
        for s in [BackfillState::Running, BackfillState::Done, BackfillState::Cancelled] {
            assert_eq!(BackfillState::parse(s.as_str()), s);
        }
    }
}
