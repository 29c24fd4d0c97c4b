//! Alarms no run raises: a workflow instance that ended failed (`workflow_failed`, to the
//! workflow's channels), and a group with enabled jobs left without a live executor
//! (`no_executor`, to the group's channels) and its return (`executor_back`). Looked for by the
//! alarm task every few seconds; each is stored with its deliveries in one transaction that
//! claims it ([`crate::store::Store::claim_alarm_event`], the group's incident row), so several
//! admins store it once, and the outbox sends it as it sends a run's.
//!
//! Whether a group has a live executor is the directory's judgement ([`Directory::view`]): an
//! executor is gone once it has not been heard for the dead timeout of this admin's up time.
//! An admin that has not been up for a dead timeout (start, pause, database back) judges no
//! group: it may simply not have heard the executors yet.

use super::silenced;
use crate::api::alarm_events::AlarmFact;
use crate::model::{AddressType, AlarmEvent, Group};
use crate::registry::Directory;
use crate::store::{GroupIncident, NewAlarmEvent, Store, StoreResult};
use crate::workflow::dag::NodeState;
use crate::workflow::spec::{Instance, Workflow};
use std::collections::HashMap;

/// How far back failed instances are looked for, by their end: older ones are left alone (an
/// admin down longer than this does not alarm them late).
const WORKFLOW_WINDOW_MS: i64 = 24 * 3600 * 1000;
/// Most failed instances alarmed per look.
const WORKFLOW_BATCH: i64 = 100;
/// Longest result of a failed node an alarm shows, in characters.
const NODE_RESULT_CHARS: usize = 300;
/// Most failed nodes an alarm names one by one.
const NODES_SHOWN: usize = 10;

/// A time as the alarms show it (UTC).
fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default()
}

fn fact(label: &str, value: impl Into<String>) -> AlarmFact {
    AlarmFact {
        label: label.to_owned(),
        value: value.into(),
    }
}

/// Stores the alarms of failed workflow instances not alarmed yet. Answers whether any
/// delivery was stored.
pub(super) async fn failed_workflows(store: &Store) -> StoreResult<bool> {
    let since = crate::model::now_ms() - WORKFLOW_WINDOW_MS;
    let mut stored = false;
    for id in store.failed_instances_to_alarm(since, WORKFLOW_BATCH).await? {
        let instance = store.instance(id).await?;
        let workflow = store.workflow(instance.workflow_id).await?;
        let deliveries = super::channel_deliveries(store, &workflow.alarm_channels).await?;
        let alarm = workflow_alarm(&workflow, &instance);
        if let Some(event_id) = store.claim_alarm_event(&alarm, &deliveries).await? {
            tracing::info!(
                instance = id,
                event_id,
                deliveries = deliveries.len(),
                "workflow alarm claimed"
            );
            stored |= !deliveries.is_empty();
        }
    }
    Ok(stored)
}

/// The `workflow_failed` alarm of `instance` of `workflow`: which nodes failed, with their runs
/// and results.
fn workflow_alarm(workflow: &Workflow, instance: &Instance) -> NewAlarmEvent {
    let failed: Vec<_> = instance.nodes.iter().filter(|n| n.state == NodeState::Failed).collect();
    let mut lines: Vec<String> = failed
        .iter()
        .take(NODES_SHOWN)
        .map(|n| {
            let result = crate::model::cut_chars(n.result.trim(), NODE_RESULT_CHARS);
            match (n.run_id, result.is_empty()) {
                (0, _) => n.node.clone(),
                (run, true) => format!("{} (run {run})", n.node),
                (run, false) => format!("{} (run {run}): {result}", n.node),
            }
        })
        .collect();
    if failed.len() > NODES_SHOWN {
        lines.push(format!("… and {} more", failed.len() - NODES_SHOWN));
    }
    let names: Vec<&str> = failed.iter().map(|n| n.node.as_str()).collect();
    let name: String = workflow.name.chars().filter(|c| !c.is_control()).take(120).collect();
    NewAlarmEvent {
        event: AlarmEvent::WorkflowFailed,
        subject: instance.id,
        claim_key: format!("workflow_failed/{}", instance.id),
        title: format!(
            "Chime alarm: workflow {} ({name}) failed, instance {}, node(s) {}",
            workflow.id,
            instance.id,
            if names.is_empty() {
                "(none)".to_owned()
            } else {
                names.join(", ")
            }
        ),
        facts: vec![
            fact("Workflow", format!("{} {name}", workflow.id)),
            fact("Instance", format!("{} ({})", instance.id, instance.trigger_type)),
            fact(
                "Failed nodes",
                if lines.is_empty() {
                    "(none)".to_owned()
                } else {
                    lines.join("\n")
                },
            ),
            fact("Scheduled", when(instance.scheduled_at)),
            fact("Ended", when(instance.finished_at)),
        ],
        link: format!("#/workflows/instance/{}", instance.id),
        note: String::new(),
    }
}

/// Opens the incidents of groups with enabled jobs and no live executor, and closes those of
/// groups with one again, each with its alarm. Answers whether any delivery was stored.
pub(super) async fn group_executors(store: &Store, directory: &Directory) -> StoreResult<bool> {
    if !directory.settled() {
        return Ok(false);
    }
    let open: HashMap<i64, GroupIncident> = store
        .group_incidents()
        .await?
        .into_iter()
        .map(|i| (i.group_id, i))
        .collect();
    let mut stored = false;
    for (group_id, jobs) in store.groups_with_enabled_jobs().await? {
        let Some(view) = directory.view(group_id) else { continue };
        // A manual group's addresses are typed in, not registered: nothing to judge.
        if view.group.address_type == AddressType::Manual || !view.addresses.is_empty() || open.contains_key(&group_id)
        {
            continue;
        }
        stored |= open_incident(store, &view.group, jobs, directory.dead_timeout()).await?;
    }
    for incident in open.into_values() {
        let view = directory.view(incident.group_id);
        match view {
            Some(v) if v.addresses.is_empty() && v.group.address_type == AddressType::Auto => {}
            Some(v) => stored |= close_incident(store, incident, &v.group, &v.addresses).await?,
            // The group is gone: its outage ends with nobody to tell.
            None => {
                store.close_group_incident(incident, None, &[]).await?;
            }
        }
    }
    Ok(stored)
}

/// What a group's alarms name it by: its app name, and its title when it differs.
fn group_label(group: &Group) -> String {
    if group.title.is_empty() || group.title == group.app_name {
        group.app_name.clone()
    } else {
        format!("{} ({})", group.app_name, group.title)
    }
}

/// Why nothing is told of group `group` now (a silence window of the group in force), if so.
async fn group_silence(store: &Store, group: &Group) -> StoreResult<Option<String>> {
    let now = crate::model::now_ms();
    let covering = store.silences_covering(0, group.id, now).await?;
    Ok(silenced(&covering, Some(group), now))
}

/// Opens group `group`'s incident with its `no_executor` alarm (no delivery while a silence
/// window covers the group). Answers whether a delivery was stored.
async fn open_incident(
    store: &Store,
    group: &Group,
    jobs: i64,
    dead_timeout: std::time::Duration,
) -> StoreResult<bool> {
    let mut deliveries = super::channel_deliveries(store, &group.alarm_channels).await?;
    if deliveries.is_empty() {
        return Ok(false);
    }
    let note = group_silence(store, group).await?.unwrap_or_default();
    if !note.is_empty() {
        deliveries.clear();
    }
    let now = crate::model::now_ms();
    let alarm = NewAlarmEvent {
        event: AlarmEvent::NoExecutor,
        subject: group.id,
        claim_key: format!("no_executor/{}/{now}", group.id),
        title: format!("Chime alarm: group {} has no live executor", group_label(group)),
        facts: vec![
            fact("Group", group_label(group)),
            fact("Enabled jobs", jobs.to_string()),
            fact(
                "Why",
                format!(
                    "no executor has registered for {}s (dead_timeout); its jobs' runs cannot be sent",
                    dead_timeout.as_secs()
                ),
            ),
            fact("Since", when(now)),
        ],
        link: "#/executors".to_owned(),
        note,
    };
    let Some(event_id) = store.open_group_incident(&alarm, &deliveries).await? else {
        return Ok(false);
    };
    tracing::warn!(group = %group.app_name, event_id, "group has no live executor; alarm claimed");
    Ok(!deliveries.is_empty())
}

/// Closes `incident` of group `group`, whose executors `addresses` are live again, with its
/// `executor_back` alarm: delivered when its outage was told and no silence window covers the
/// group now. Answers whether a delivery was stored.
async fn close_incident(
    store: &Store,
    incident: GroupIncident,
    group: &Group,
    addresses: &[String],
) -> StoreResult<bool> {
    let mut deliveries = if incident.alarmed {
        super::channel_deliveries(store, &group.alarm_channels).await?
    } else {
        Vec::new()
    };
    let mut note = group_silence(store, group).await?.unwrap_or_default();
    if !incident.alarmed {
        note = "the outage's alarm was not sent, so neither is its end".to_owned();
    }
    if !note.is_empty() {
        deliveries.clear();
    }
    let now = crate::model::now_ms();
    let shown: Vec<&str> = addresses.iter().take(5).map(String::as_str).collect();
    let alarm = NewAlarmEvent {
        event: AlarmEvent::ExecutorBack,
        subject: group.id,
        claim_key: format!("executor_back/{}/{}", group.id, incident.opened_at),
        title: format!("Chime alarm: group {} has a live executor again", group_label(group)),
        facts: vec![
            fact("Group", group_label(group)),
            fact("Executors", format!("{} live: {}", addresses.len(), shown.join(", "))),
            fact("Down since", when(incident.opened_at)),
            fact("Back at", when(now)),
        ],
        link: "#/executors".to_owned(),
        note,
    };
    if !store.close_group_incident(incident, Some(&alarm), &deliveries).await? {
        return Ok(false);
    }
    tracing::info!(group = %group.app_name, "group has a live executor again; alarm claimed");
    Ok(!deliveries.is_empty())
}
