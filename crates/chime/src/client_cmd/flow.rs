//! `chime limit …` and `chime queue …`: flow control through the REST API (see docs/admin.md,
//! "Flow control: limits, priorities and the queue"). Setting and deleting limits needs an
//! administrator; the queue shows the caller's groups' runs, and run-now and cancel need an
//! operator of the run's group.

use super::output::{one_line, table, time};
use super::{query_value, Client, Failure};
use chime_admin::api::{Limit, LimitSpec, QueuedRunEntry};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

/// `chime limit …`
#[derive(clap::Args, Debug)]
pub struct LimitArgs {
    #[command(subcommand)]
    pub(super) cmd: LimitCmd,
}

#[derive(clap::Subcommand, Debug)]
pub(super) enum LimitCmd {
    /// List the limits, each with its runs running now and its runs waiting in the queue.
    List,
    /// Set a limit: at most MAX runs at once under NAME, at most RATE starting per second or
    /// minute, or both (created when new; what is left out does not apply).
    Set {
        /// A jobs' concurrency key (`warehouse-db`), `group:<app_name>` or
        /// `executor:<address>` (`executor:http://10.0.0.5:9999`).
        name: String,
        /// How many runs may run at once under it (1 to 1000000).
        max: Option<i64>,
        /// How many runs may start under it per `--per`.
        #[arg(long)]
        rate: Option<i64>,
        /// The rate's window: `second` (the default) or `minute`.
        #[arg(long)]
        per: Option<String>,
        /// End a run that waited this many seconds in the queue on it, failed.
        #[arg(long = "queue-timeout", value_name = "SECS")]
        queue_timeout: Option<i64>,
    },
    /// Delete a limit: the runs waiting only on it go on.
    #[command(visible_alias = "rm")]
    Delete {
        /// The limit's name.
        name: String,
    },
}

/// `chime queue [list|run-now|cancel]`
#[derive(clap::Args, Debug)]
pub struct QueueArgs {
    /// Without a subcommand: `queue list`.
    #[command(subcommand)]
    pub(super) cmd: Option<QueueCmd>,
}

#[derive(clap::Subcommand, Debug)]
pub(super) enum QueueCmd {
    /// List the runs waiting for a slot of a full limit, in the order they will go.
    List,
    /// Send a queued run at the queue's next round, whatever its limits (it still takes its
    /// slots, over their maximum).
    RunNow {
        /// Run id.
        run_id: i64,
    },
    /// Cancel a queued run: it ends as killed, never sent.
    Cancel {
        /// Run id.
        run_id: i64,
    },
}

/// The path of limit `name`: its `:` and `/` (`executor:http://h:p`) percent-encoded, so the
/// name stays one path segment.
fn limit_path(name: &str) -> String {
    format!("/v1/limits/{}", query_value(name))
}

/// Runs one `chime limit` command.
pub(super) async fn limit_cmd(c: &Client, cmd: LimitCmd) -> Result<(), Failure> {
    match cmd {
        LimitCmd::List => c.print(c.call(Method::GET, "/v1/limits", None).await?, |limits: Vec<Limit>| {
            print_limits(&limits)
        }),
        LimitCmd::Set {
            name,
            max,
            rate,
            per,
            queue_timeout,
        } => {
            let spec = LimitSpec {
                max_running: max,
                rate,
                per,
                queue_timeout_secs: queue_timeout,
            };
            c.print(c.send(Method::PUT, &limit_path(&name), &spec).await?, |l: Limit| {
                print_limits(&[l])
            })
        }
        LimitCmd::Delete { name } => {
            c.call(Method::DELETE, &limit_path(&name), None).await?;
            c.print(json!({ "deleted": name }), |_: Value| outln!("deleted limit {name}"))
        }
    }
}

/// Runs one `chime queue` command.
pub(super) async fn queue_cmd(c: &Client, cmd: QueueCmd) -> Result<(), Failure> {
    match cmd {
        QueueCmd::List => {
            let answer = c.call(Method::GET, "/v1/queue", None).await?;
            // Group names only for people; `--json` prints the answer as it came.
            let groups = if c.opts.json {
                Default::default()
            } else {
                c.group_names().await
            };
            c.print(answer, |queue: Vec<QueuedRunEntry>| print_queue(&queue, &groups))
        }
        QueueCmd::RunNow { run_id } => c.print(
            c.call(Method::POST, &format!("/v1/runs/{run_id}/run-now"), None)
                .await
                .map_err(|e| not_queued(run_id, e))?,
            |_: Value| outln!("run {run_id} goes at the queue's next round, whatever its limits"),
        ),
        QueueCmd::Cancel { run_id } => c.print(
            c.call(Method::POST, &format!("/v1/runs/{run_id}/cancel"), None)
                .await
                .map_err(|e| not_queued(run_id, e))?,
            |_: Value| outln!("cancelled run {run_id}: it ends as killed, never sent"),
        ),
    }
}

/// The admin's 409 for a run that is not in the queue, with where to look instead: it has
/// been sent (or ended) already, and run-now and cancel only act on waiting runs.
fn not_queued(run_id: i64, Failure(msg): Failure) -> Failure {
    if msg.ends_with("(HTTP 409)") {
        Failure(format!(
            "{msg}; `chime run show {run_id}` tells its state, `chime run kill {run_id}` stops a running run"
        ))
    } else {
        Failure(msg)
    }
}

/// Where run `run_id` waits in the queue, when it does: the queue listing (the caller's
/// groups' runs, at most the admin's listing size) holds it.
pub(super) async fn queued_entry(c: &Client, run_id: i64) -> Result<Option<QueuedRunEntry>, Failure> {
    let queue: Vec<QueuedRunEntry> = c.get("/v1/queue").await?;
    Ok(queue.into_iter().find(|e| e.run_id == run_id))
}

fn print_limits(limits: &[Limit]) {
    let rows = limits
        .iter()
        .map(|l| {
            let or_dash = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
            let rate = match (l.rate, l.per.as_deref()) {
                (Some(r), Some("minute")) => format!("{r}/min"),
                (Some(r), _) => format!("{r}/s"),
                (None, _) => "-".to_owned(),
            };
            vec![
                l.name.clone(),
                or_dash(l.max_running),
                rate,
                l.queue_timeout_secs.map_or_else(|| "-".to_owned(), |s| format!("{s}s")),
                l.running.to_string(),
                l.queued.to_string(),
                time(l.updated_at),
            ]
        })
        .collect();
    table(
        &["NAME", "MAX", "RATE", "TIMEOUT", "RUNNING", "QUEUED", "UPDATED"],
        rows,
    );
}

fn print_queue(queue: &[QueuedRunEntry], groups: &super::output::GroupNames) {
    let rows = queue
        .iter()
        .map(|e| {
            // A run an operator sent on, or one already taken out to be sent, is not waiting
            // for its turn any more: said so, as it still shows until it has gone.
            let state = if e.leaving {
                "leaving"
            } else if e.skip_queue {
                "run now"
            } else {
                "waiting"
            };
            vec![
                e.position.to_string(),
                e.run_id.to_string(),
                e.job_id.to_string(),
                groups.name(e.group_id),
                one_line(&e.description, 40),
                e.waits_on.clone(),
                e.priority.to_string(),
                waited(e.waited_ms),
                state.to_owned(),
            ]
        })
        .collect();
    table(
        &[
            "POS",
            "RUN",
            "JOB",
            "GROUP",
            "DESCRIPTION",
            "WAITS ON",
            "PRIORITY",
            "WAITED",
            "STATE",
        ],
        rows,
    );
}

/// A wait as people read it, to the second: `4m 12s`, `0s`.
fn waited(ms: i64) -> String {
    let secs = u64::try_from(ms / 1000).unwrap_or(0);
    humantime::format_duration(Duration::from_secs(secs)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_names_stay_one_path_segment() {
        assert_eq!(limit_path("warehouse-db"), "/v1/limits/warehouse-db");
        assert_eq!(limit_path("group:billing"), "/v1/limits/group%3Abilling");
        assert_eq!(
            limit_path("executor:http://10.0.0.5:9999"),
            "/v1/limits/executor%3Ahttp%3A%2F%2F10.0.0.5%3A9999"
        );
    }

    #[test]
    fn waits_read_to_the_second() {
        assert_eq!(waited(0), "0s");
        assert_eq!(waited(252_900), "4m 12s");
        assert_eq!(waited(-5), "0s");
    }
}
