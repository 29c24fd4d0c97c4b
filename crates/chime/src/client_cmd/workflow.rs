//! `chime workflow …`: workflows and their instances through the REST API (see
//! docs/workflows.md).

use super::output::{br_lines, cell, table, time, wire_name, zoned};
use super::{query_value, read_answer, Client, Failure, TriggerBody};
use chime_admin::workflow::dag::{InstanceState, When};
use chime_admin::workflow::spec::{Instance, Workflow, WorkflowSpec};
use chime_protocol::ScheduleType;
use reqwest::Method;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// `chime workflow …`
#[derive(clap::Args, Debug)]
pub struct WorkflowArgs {
    #[command(subcommand)]
    pub(super) cmd: WorkflowCmd,
}

#[derive(clap::Subcommand, Debug)]
pub(super) enum WorkflowCmd {
    /// List workflows.
    List,
    /// Show a workflow: its schedule, nodes and edges.
    Show { id: i64 },
    /// Create a workflow from a JSON file (`{"name", "schedule_type", …, "definition": {"nodes",
    /// "edges"}}`, as `POST /v1/workflows` takes it).
    Add {
        /// The JSON file (`-` for standard input).
        #[arg(long, short)]
        file: PathBuf,
    },
    /// Change a workflow from a JSON file (fields left out keep their value).
    Edit {
        id: i64,
        /// The JSON file (`-` for standard input).
        #[arg(long, short)]
        file: PathBuf,
    },
    /// Start scheduling a workflow.
    Start { id: i64 },
    /// Stop scheduling a workflow (its instances go on).
    Stop { id: i64 },
    /// Pause a workflow until a time: fires due before then follow its misfire policy.
    Pause {
        /// Workflow id.
        id: i64,
        #[command(flatten)]
        end: super::pause::PauseEnd,
    },
    /// End a workflow's pause now.
    Resume { id: i64 },
    /// Backfill a workflow: one instance for every fire time its schedule had in a past range,
    /// its nodes' date parameters at that fire time; a fire time backfilled before is left out.
    Backfill {
        /// Workflow id.
        id: i64,
        #[command(flatten)]
        args: super::backfill::BackfillArgs,
    },
    /// List a workflow's backfills, newest first, with how far each got.
    Backfills {
        /// Workflow id.
        id: i64,
    },
    /// Cancel a running backfill: its fire times not started are let go; instances go on.
    BackfillCancel {
        /// Workflow id.
        id: i64,
        /// Backfill id.
        backfill: i64,
    },
    /// Delete a workflow and its finished instances.
    Rm { id: i64 },
    /// Fire a workflow now; with --wait, follow the instance to its end (exit 1 unless it
    /// succeeded).
    Trigger {
        id: i64,
        /// Wait for the instance to finish, printing its nodes as they change.
        #[arg(long)]
        wait: bool,
    },
    /// List instances, newest first.
    Instances {
        /// Only this workflow's.
        #[arg(long)]
        workflow: Option<i64>,
        /// Only in this state (queued, running, succeeded, failed, stopped, skipped).
        #[arg(long)]
        state: Option<String>,
        /// At most this many (1–1000).
        #[arg(long, default_value_t = 20)]
        limit: i64,
    },
    /// Show an instance: each node's state, run and result.
    Instance { id: i64 },
    /// Stop an instance: its running nodes are stopped and their runs killed.
    Kill { id: i64 },
    /// Retry a failed node of an instance.
    Retry { id: i64, node: String },
    /// Skip a node of an instance (its children go on as after a success).
    Skip { id: i64, node: String },
    /// Mark a failed node of an instance succeeded.
    Succeed { id: i64, node: String },
}

/// Most bytes of a workflow file read: the request body's own limit.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// Reads a workflow file, checked against the body's type before anything is sent.
fn read_spec(file: &PathBuf) -> Result<WorkflowSpec, Failure> {
    use std::io::Read;
    let mut text = String::new();
    let name = file.display().to_string();
    let read = if name == "-" {
        std::io::stdin().take(MAX_FILE_BYTES + 1).read_to_string(&mut text)
    } else {
        std::fs::File::open(file).and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text))
    };
    read.map_err(|e| Failure(format!("{name}: {e}")))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(Failure(format!("{name}: larger than 4 MiB")));
    }
    serde_json::from_str(&text).map_err(|e| Failure(format!("{name}: not a workflow: {e}")))
}

fn schedule(w: &Workflow) -> String {
    match w.schedule_type {
        ScheduleType::None => "-".to_owned(),
        t if w.calendar.is_empty() => format!("{t} {} ({})", w.schedule_expr, w.time_zone),
        t => format!("{t} {} ({}, calendar {})", w.schedule_expr, w.time_zone, w.calendar),
    }
}

fn print_workflows(workflows: &[Workflow]) {
    let rows = workflows
        .iter()
        .map(|w| {
            vec![
                w.id.to_string(),
                w.name.clone(),
                schedule(w),
                if w.running { "started" } else { "stopped" }.to_owned(),
                zoned(w.next_fire_at, &w.time_zone),
                w.definition.nodes.len().to_string(),
            ]
        })
        .collect();
    table(&["ID", "NAME", "SCHEDULE", "STATE", "NEXT FIRE", "NODES"], rows);
}

fn print_workflow(w: Workflow) {
    outln!("workflow {}  {}", w.id, w.name);
    outln!("schedule  {}", schedule(&w));
    let limit = match w.max_instances {
        0 => "none".to_owned(),
        n => format!("{n} instances"),
    };
    outln!("limit     {limit} ({})", w.on_limit.as_str());
    if !w.alarm_channels.is_empty() {
        outln!("alarms    {}", w.alarm_channels);
    }
    let edges = &w.definition.edges;
    let rows = w
        .definition
        .nodes
        .iter()
        .map(|n| {
            let parents: Vec<String> = edges
                .iter()
                .filter(|e| e.to == n.key)
                .map(|e| match e.when {
                    When::Success => e.from.clone(),
                    when => format!("{} ({})", e.from, wire_name(&when)),
                })
                .collect();
            vec![
                n.key.clone(),
                n.job_id.to_string(),
                parents.join(", "),
                wire_name(&n.join),
                n.param.as_deref().unwrap_or("(job's)").to_owned(),
            ]
        })
        .collect();
    table(&["NODE", "JOB", "AFTER", "JOIN", "PARAM"], rows);
}

fn print_instances(instances: &[Instance]) {
    let rows = instances
        .iter()
        .map(|i| {
            vec![
                i.id.to_string(),
                i.workflow_id.to_string(),
                i.state.as_str().to_owned(),
                i.trigger_type.clone(),
                time(i.scheduled_at),
                time(i.finished_at),
            ]
        })
        .collect();
    table(&["ID", "WORKFLOW", "STATE", "TRIGGER", "SCHEDULED", "FINISHED"], rows);
}

/// Nodes of an instance in the graph's order, waiting ones included.
fn node_rows(i: &Instance) -> Vec<Vec<String>> {
    i.definition
        .nodes
        .iter()
        .map(|n| match i.nodes.iter().find(|d| d.node == n.key) {
            Some(d) => vec![
                n.key.clone(),
                d.state.as_str().to_owned(),
                match d.run_id {
                    0 => "-".to_owned(),
                    run => run.to_string(),
                },
                br_lines(&d.result, " ").replace('\n', " "),
            ],
            None => vec![n.key.clone(), "waiting".into(), "-".into(), String::new()],
        })
        .collect()
}

fn print_instance(i: Instance) {
    outln!(
        "instance {}  workflow {}  {}  ({}, scheduled {})",
        i.id,
        i.workflow_id,
        i.state.as_str(),
        i.trigger_type,
        time(i.scheduled_at)
    );
    table(&["NODE", "STATE", "RUN", "RESULT"], node_rows(&i));
}

/// Polls instance `id` until it is final; prints each node's change for people. Answers the
/// final instance as the admin wrote it and as read.
async fn follow(c: &Client, id: i64) -> Result<(Value, Instance), Failure> {
    let mut seen: Vec<Vec<String>> = Vec::new();
    loop {
        let answer = c
            .call(Method::GET, &format!("/v1/workflow-instances/{id}"), None)
            .await?;
        let i: Instance = read_answer(answer.clone())?;
        if !c.opts.json {
            for row in node_rows(&i) {
                if row[1] != "waiting" && !seen.contains(&row) {
                    outln!("{}  {}  run {}  {}", row[0], row[1], row[2], row[3]);
                    seen.push(row);
                }
            }
        }
        if !matches!(i.state, InstanceState::Queued | InstanceState::Running) {
            return Ok((answer, i));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub(super) async fn dispatch(c: &Client, cmd: WorkflowCmd) -> Result<(), Failure> {
    match cmd {
        WorkflowCmd::List => c.print(c.call(Method::GET, "/v1/workflows", None).await?, |w: Vec<_>| {
            print_workflows(&w)
        }),
        WorkflowCmd::Show { id } => c.print(
            c.call(Method::GET, &format!("/v1/workflows/{id}"), None).await?,
            print_workflow,
        ),
        WorkflowCmd::Add { file } => c.print(
            c.send(Method::POST, "/v1/workflows", &read_spec(&file)?).await?,
            print_workflow,
        ),
        WorkflowCmd::Edit { id, file } => c.print(
            c.send(Method::PATCH, &format!("/v1/workflows/{id}"), &read_spec(&file)?)
                .await?,
            print_workflow,
        ),
        WorkflowCmd::Start { id } => c.print(action(c, &format!("/v1/workflows/{id}/start")).await?, print_workflow),
        WorkflowCmd::Stop { id } => c.print(action(c, &format!("/v1/workflows/{id}/stop")).await?, print_workflow),
        WorkflowCmd::Pause { id, end } => c.print(
            c.send(Method::POST, &format!("/v1/workflows/{id}/pause"), &end.body()?)
                .await?,
            print_workflow,
        ),
        WorkflowCmd::Resume { id } => c.print(action(c, &format!("/v1/workflows/{id}/resume")).await?, print_workflow),
        WorkflowCmd::Backfill { id, args } => super::backfill::start(c, &format!("/v1/workflows/{id}"), args).await,
        WorkflowCmd::Backfills { id } => super::backfill::list(c, &format!("/v1/workflows/{id}")).await,
        WorkflowCmd::BackfillCancel { id, backfill } => {
            super::backfill::cancel(c, &format!("/v1/workflows/{id}"), backfill).await
        }
        WorkflowCmd::Rm { id } => {
            c.call(Method::DELETE, &format!("/v1/workflows/{id}"), None).await?;
            if !c.opts.json {
                outln!("deleted workflow {id}");
            }
            Ok(())
        }
        WorkflowCmd::Trigger { id, wait } => trigger(c, id, wait).await,
        WorkflowCmd::Instances { workflow, state, limit } => {
            let mut q = format!("/v1/workflow-instances?limit={limit}");
            if let Some(w) = workflow {
                q.push_str(&format!("&workflow_id={w}"));
            }
            if let Some(s) = state {
                q.push_str(&format!("&state={}", query_value(&s)));
            }
            c.print(c.call(Method::GET, &q, None).await?, |i: Vec<_>| print_instances(&i))
        }
        WorkflowCmd::Instance { id } => c.print(
            c.call(Method::GET, &format!("/v1/workflow-instances/{id}"), None)
                .await?,
            print_instance,
        ),
        WorkflowCmd::Kill { id } => c.print(
            action(c, &format!("/v1/workflow-instances/{id}/stop")).await?,
            print_instance,
        ),
        WorkflowCmd::Retry { id, node } => node_action(c, id, &node, "retry").await,
        WorkflowCmd::Skip { id, node } => node_action(c, id, &node, "skip").await,
        WorkflowCmd::Succeed { id, node } => node_action(c, id, &node, "succeed").await,
    }
}

/// `POST`s an action without parameters (`start`, `stop`, …) to `path`.
async fn action(c: &Client, path: &str) -> Result<Value, Failure> {
    c.call(Method::POST, path, Some(json!({}))).await
}

/// `workflow retry|skip|succeed ID NODE`: the action on one node of an instance.
async fn node_action(c: &Client, id: i64, node: &str, action_name: &str) -> Result<(), Failure> {
    let path = format!("/v1/workflow-instances/{id}/nodes/{}/{action_name}", query_value(node));
    c.print(action(c, &path).await?, print_instance)
}

/// `workflow trigger ID [--wait]`: fires the workflow; with `--wait`, follows the instance
/// to its end and fails unless it succeeded.
async fn trigger(c: &Client, id: i64, wait: bool) -> Result<(), Failure> {
    let answer = c
        .send(
            Method::POST,
            &format!("/v1/workflows/{id}/trigger"),
            &TriggerBody::MANUAL,
        )
        .await?;
    let instance = answer["instance_id"].as_i64().unwrap_or_default();
    if !wait {
        return c.print(answer, |v: Value| outln!("instance {}", cell(&v["instance_id"])));
    }
    if !c.opts.json {
        outln!("instance {instance}");
    }
    let (answer, end) = follow(c, instance).await?;
    c.print(answer, |i: Instance| outln!("instance {}: {}", i.id, i.state.as_str()))?;
    if end.state != InstanceState::Succeeded {
        return Err(Failure(format!("instance {instance} ended {}", end.state.as_str())));
    }
    Ok(())
}
