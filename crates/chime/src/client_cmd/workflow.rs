//! `chime workflow …`: workflows and their instances through the REST API (see
//! docs/workflows.md).

use super::output::{cell, table, time, zoned};
use super::{Client, Failure};
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

fn read_spec(file: &PathBuf) -> Result<Value, Failure> {
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
    serde_json::from_str(&text).map_err(|e| Failure(format!("{name}: not JSON: {e}")))
}

fn schedule(w: &Value) -> String {
    match w["schedule_type"].as_str() {
        Some("NONE") | None => "-".to_owned(),
        Some(t) => format!("{t} {} ({})", cell(&w["schedule_expr"]), cell(&w["time_zone"])),
    }
}

fn print_workflows(v: &Value) {
    let rows = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| {
            vec![
                cell(&w["id"]),
                cell(&w["name"]),
                schedule(w),
                if w["running"] == true { "started" } else { "stopped" }.to_owned(),
                zoned(&w["next_fire_at"], w["time_zone"].as_str().unwrap_or("UTC")),
                w["definition"]["nodes"].as_array().map_or(0, Vec::len).to_string(),
            ]
        })
        .collect();
    table(&["ID", "NAME", "SCHEDULE", "STATE", "NEXT FIRE", "NODES"], rows);
}

fn print_workflow(w: &Value) {
    outln!("workflow {}  {}", cell(&w["id"]), cell(&w["name"]));
    outln!("schedule  {}", schedule(w));
    outln!(
        "limit     {} ({})",
        match w["max_instances"].as_i64() {
            Some(0) | None => "none".to_owned(),
            Some(n) => format!("{n} instances"),
        },
        cell(&w["on_limit"])
    );
    let rows = w["definition"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            let parents: Vec<String> = w["definition"]["edges"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["to"] == n["key"])
                .map(|e| match e["when"].as_str() {
                    Some("success") | None => cell(&e["from"]),
                    Some(when) => format!("{} ({when})", cell(&e["from"])),
                })
                .collect();
            vec![
                cell(&n["key"]),
                cell(&n["job_id"]),
                parents.join(", "),
                cell(&n["join"]),
                n["param"].as_str().unwrap_or("(job's)").to_owned(),
            ]
        })
        .collect();
    table(&["NODE", "JOB", "AFTER", "JOIN", "PARAM"], rows);
}

fn print_instances(v: &Value) {
    let rows = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            vec![
                cell(&i["id"]),
                cell(&i["workflow_id"]),
                cell(&i["state"]),
                cell(&i["trigger_type"]),
                time(&i["scheduled_at"]),
                time(&i["finished_at"]),
            ]
        })
        .collect();
    table(&["ID", "WORKFLOW", "STATE", "TRIGGER", "SCHEDULED", "FINISHED"], rows);
}

/// Nodes of an instance in the graph's order, waiting ones included.
fn node_rows(i: &Value) -> Vec<Vec<String>> {
    let done: Vec<&Value> = i["nodes"].as_array().into_iter().flatten().collect();
    i["definition"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            let key = &n["key"];
            match done.iter().find(|d| d["node"] == *key) {
                Some(d) => vec![
                    cell(key),
                    cell(&d["state"]),
                    if d["run_id"] == 0 {
                        "-".to_owned()
                    } else {
                        cell(&d["run_id"])
                    },
                    super::output::br_lines(d["result"].as_str().unwrap_or(""), " ").replace('\n', " "),
                ],
                None => vec![cell(key), "waiting".into(), "-".into(), String::new()],
            }
        })
        .collect()
}

fn print_instance(i: &Value) {
    outln!(
        "instance {}  workflow {}  {}  ({}, scheduled {})",
        cell(&i["id"]),
        cell(&i["workflow_id"]),
        cell(&i["state"]),
        cell(&i["trigger_type"]),
        time(&i["scheduled_at"])
    );
    table(&["NODE", "STATE", "RUN", "RESULT"], node_rows(i));
}

/// Polls instance `id` until it is final; prints each node's change for people.
async fn follow(c: &Client, id: i64) -> Result<Value, Failure> {
    let mut seen: Vec<Vec<String>> = Vec::new();
    loop {
        let i = c
            .call(Method::GET, &format!("/v1/workflow-instances/{id}"), None)
            .await?;
        if !c.opts.json {
            for row in node_rows(&i) {
                if row[1] != "waiting" && !seen.contains(&row) {
                    outln!("{}  {}  run {}  {}", row[0], row[1], row[2], row[3]);
                    seen.push(row);
                }
            }
        }
        if !matches!(i["state"].as_str(), Some("queued" | "running")) {
            return Ok(i);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub(super) async fn dispatch(c: &Client, cmd: WorkflowCmd) -> Result<(), Failure> {
    let show = |v: &Value, human: fn(&Value)| {
        if c.opts.json {
            outln!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
        } else {
            human(v);
        }
    };
    match cmd {
        WorkflowCmd::List => show(&c.call(Method::GET, "/v1/workflows", None).await?, print_workflows),
        WorkflowCmd::Show { id } => show(
            &c.call(Method::GET, &format!("/v1/workflows/{id}"), None).await?,
            print_workflow,
        ),
        WorkflowCmd::Add { file } => {
            let v = c.call(Method::POST, "/v1/workflows", Some(read_spec(&file)?)).await?;
            show(&v, print_workflow);
        }
        WorkflowCmd::Edit { id, file } => {
            let v = c
                .call(Method::PATCH, &format!("/v1/workflows/{id}"), Some(read_spec(&file)?))
                .await?;
            show(&v, print_workflow);
        }
        WorkflowCmd::Start { id } | WorkflowCmd::Stop { id } => {
            let action = if matches!(cmd, WorkflowCmd::Start { .. }) {
                "start"
            } else {
                "stop"
            };
            let v = c
                .call(Method::POST, &format!("/v1/workflows/{id}/{action}"), Some(json!({})))
                .await?;
            show(&v, print_workflow);
        }
        WorkflowCmd::Rm { id } => {
            c.call(Method::DELETE, &format!("/v1/workflows/{id}"), None).await?;
            if !c.opts.json {
                outln!("deleted workflow {id}");
            }
        }
        WorkflowCmd::Trigger { id, wait } => {
            let v = c
                .call(
                    Method::POST,
                    &format!("/v1/workflows/{id}/trigger"),
                    Some(json!({"trigger_type": "MANUAL"})),
                )
                .await?;
            let instance = v["instance_id"].as_i64().unwrap_or_default();
            if !wait {
                show(&v, |v| outln!("instance {}", cell(&v["instance_id"])));
                return Ok(());
            }
            if !c.opts.json {
                outln!("instance {instance}");
            }
            let end = follow(c, instance).await?;
            show(&end, |i| outln!("instance {}: {}", cell(&i["id"]), cell(&i["state"])));
            if end["state"] != "succeeded" {
                return Err(Failure(format!("instance {instance} ended {}", cell(&end["state"]))));
            }
        }
        WorkflowCmd::Instances { workflow, state, limit } => {
            let mut q = format!("/v1/workflow-instances?limit={limit}");
            if let Some(w) = workflow {
                q.push_str(&format!("&workflow_id={w}"));
            }
            if let Some(s) = state {
                q.push_str(&format!("&state={}", super::query_value(&s)));
            }
            show(&c.call(Method::GET, &q, None).await?, print_instances);
        }
        WorkflowCmd::Instance { id } => show(
            &c.call(Method::GET, &format!("/v1/workflow-instances/{id}"), None)
                .await?,
            print_instance,
        ),
        WorkflowCmd::Kill { id } => show(
            &c.call(
                Method::POST,
                &format!("/v1/workflow-instances/{id}/stop"),
                Some(json!({})),
            )
            .await?,
            print_instance,
        ),
        WorkflowCmd::Retry { id, ref node }
        | WorkflowCmd::Skip { id, ref node }
        | WorkflowCmd::Succeed { id, ref node } => {
            let action = match cmd {
                WorkflowCmd::Retry { .. } => "retry",
                WorkflowCmd::Skip { .. } => "skip",
                _ => "succeed",
            };
            let path = format!(
                "/v1/workflow-instances/{id}/nodes/{}/{action}",
                super::query_value(node)
            );
            show(&c.call(Method::POST, &path, Some(json!({}))).await?, print_instance);
        }
    }
    Ok(())
}
