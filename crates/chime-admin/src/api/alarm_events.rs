//! Alarms no run raised (`GET /v1/alarm-events`): a workflow instance that failed, a group
//! left without a live executor and its return. Each is stored once, with the message it was
//! raised with and its deliveries, which the outbox sends as it sends a run's.

use super::alarm_channels::{AlarmDelivery, AlarmEvent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One line of an alarm's message: a label and its value.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct AlarmFact {
    /// What the value is (`Workflow`, `Failed nodes`, `Group`, …).
    pub label: String,
    /// The value, as the message shows it.
    pub value: String,
}

/// An alarm no run raised, with its deliveries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct AlarmEventEntry {
    /// Id.
    pub id: i64,
    /// What it tells: `workflow_failed`, `no_executor` or `executor_back`.
    pub event: AlarmEvent,
    /// What it is about: the workflow instance's id, or the group's.
    pub subject: i64,
    /// The message's title (an e-mail's subject).
    pub title: String,
    /// The message's lines.
    pub facts: Vec<AlarmFact>,
    /// The console's page of its subject, relative to `--public-url` (`#/workflow-instances/7`).
    pub link: String,
    /// Why nothing was sent, when nothing was (a silence window in force); empty otherwise.
    pub note: String,
    /// When it was raised, epoch ms.
    pub created_at: i64,
    /// Its deliveries, one per channel, in the order they were stored.
    pub deliveries: Vec<AlarmDelivery>,
}
