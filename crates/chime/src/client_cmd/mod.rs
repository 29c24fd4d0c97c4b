//! The command-line client of the REST API: `chime group|job|run|calendar|executors|export|apply …`.
//!
//! Every command prints an aligned table for people, or the API's JSON with `--json`.

mod api_key;
mod backfill;
mod calendar;
mod flow;
mod job_body;
mod jobs_doc;
mod output;
mod pause;
mod workflow;

pub use api_key::ApiKeyArgs;
pub use calendar::CalendarArgs;
pub use flow::{LimitArgs, QueueArgs};
pub use workflow::WorkflowArgs;

use chime_admin::api::{GroupSpec, Job};
use chime_admin::model::{Run, RunStatus};
use chime_admin::store::{ApplyPlan, JobsDocument};
use output::{
    br_lines, cell, next_fire_times, print_groups, print_job_detail, print_jobs, print_run_detail, print_runs,
    skipped_days, table, time, wire_name, zoned, GroupAnswer, GroupNames,
};
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::process::ExitCode;
use std::time::Duration;

/// Options shared by every client command (also accepted before the subcommand).
#[derive(clap::Args, Debug, Clone)]
pub struct ClientOpts {
    /// Base URL of the admin.
    #[arg(
        long,
        global = true,
        env = "CHIME_ADMIN_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub admin: String,
    /// Bearer token of the admin's REST API.
    #[arg(long, global = true, env = "CHIME_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

/// `chime group …`
#[derive(clap::Args, Debug)]
pub struct GroupArgs {
    #[command(subcommand)]
    cmd: GroupCmd,
}

#[derive(clap::Subcommand, Debug)]
enum GroupCmd {
    /// Create an executor group.
    Add {
        /// App name the executors register with.
        #[arg(long)]
        appname: String,
        #[command(flatten)]
        fields: GroupFields,
        /// Let the group's executors work without any access token, as legacy XXL-JOB
        /// executors without one do. Anyone who reaches the admin can then register as one of
        /// them and receive the group's jobs; links are refused for it. The admin warns at each
        /// start.
        #[arg(long, conflicts_with = "access_token")]
        insecure_no_token: bool,
    },
    /// Change a group: what is given replaces its value, the rest stays.
    Update {
        /// Group id or app name.
        group: String,
        #[command(flatten)]
        fields: GroupFields,
        /// Let the group's executors work without any access token (see `group add`).
        #[arg(long, conflicts_with_all = ["access_token", "require_token"])]
        insecure_no_token: bool,
        /// Require the admin's access token from the group's executors again.
        #[arg(long)]
        require_token: bool,
    },
    /// List groups.
    List,
    /// Delete a group (id or app name).
    Rm {
        /// Group id or app name.
        group: String,
    },
    /// Pause every job of a group until a time (maintenance).
    Pause {
        /// Group id or app name.
        group: String,
        #[command(flatten)]
        end: pause::PauseEnd,
    },
    /// End the pause of every job of a group now.
    Resume {
        /// Group id or app name.
        group: String,
    },
}

/// Group fields shared by `group add` and `group update`.
#[derive(clap::Args, Debug)]
struct GroupFields {
    /// Display name (on `add`, defaults to the app name).
    #[arg(long)]
    title: Option<String>,
    /// Manual addresses (comma-separated): they make the group manual. Without them, `add`
    /// makes a group whose executors register themselves.
    #[arg(long, value_delimiter = ',')]
    addresses: Vec<String>,
    /// Protocol generation: G2 (XXL-JOB 2.4, the default on `add`), G3, G4.
    #[arg(long)]
    protocol: Option<String>,
    /// The group's own executor access token (XXL-JOB 3.5 has one per group), used instead of
    /// the admin's for this group's executors; on `update`, "" removes it (the admin's applies).
    #[arg(long, env = "CHIME_GROUP_ACCESS_TOKEN", hide_env_values = true)]
    access_token: Option<String>,
}

/// `chime job …`
#[derive(clap::Args, Debug)]
pub struct JobArgs {
    #[command(subcommand)]
    cmd: JobCmd,
}

/// Job fields shared by `job add` and `job update` (alias `job edit`).
#[derive(clap::Args, Debug, Default)]
struct JobFields {
    /// Group app name.
    #[arg(long)]
    group: Option<String>,
    /// BEAN handler name.
    #[arg(long)]
    handler: Option<String>,
    /// Quartz cron expression (seconds first).
    #[arg(long, conflicts_with_all = ["fix_rate", "fix_delay", "manual"])]
    cron: Option<String>,
    /// Time zone of the cron expression (IANA name).
    #[arg(long)]
    tz: Option<String>,
    /// Fixed rate in seconds (or e.g. 1500ms).
    #[arg(long, conflicts_with_all = ["fix_delay", "manual"])]
    fix_rate: Option<String>,
    /// Fixed delay after the previous run ended, in seconds (or e.g. 1500ms).
    #[arg(long, conflicts_with = "manual")]
    fix_delay: Option<String>,
    /// No schedule: runs only when triggered.
    #[arg(long)]
    manual: bool,
    /// A further schedule, as `CRON <expression> [@zone]` or `FIX_RATE <seconds>`; the job
    /// fires at the times of all of them, once per instant. Repeat for more (at most 8); given
    /// on update, the list replaces the job's (`--set more_schedules=[]` removes them).
    #[arg(long, value_name = "SCHEDULE")]
    also: Vec<String>,
    /// Business calendar (`chime calendar`) whose business days a CRON or FIX_RATE schedule
    /// fires on: its fires on other days are left out. An empty value removes it.
    #[arg(long, value_name = "NAME")]
    calendar: Option<String>,
    /// Description.
    #[arg(long)]
    desc: Option<String>,
    /// Owner.
    #[arg(long)]
    owner: Option<String>,
    /// Alarm e-mail addresses, comma-separated: they get an e-mail when a run fails for good
    /// (the job's alarm contacts; needs the admin's --smtp-url). An empty value clears them.
    #[arg(long, value_name = "EMAILS")]
    alarm_email: Option<String>,
    /// Parameter.
    #[arg(long)]
    param: Option<String>,
    /// Route strategy (FIRST, ROUND, CONSISTENT_HASH, SHARDING_BROADCAST, …).
    #[arg(long)]
    route: Option<String>,
    /// Block strategy (SERIAL_EXECUTION, DISCARD_LATER, COVER_EARLY).
    #[arg(long)]
    block: Option<String>,
    /// Misfire policy (DO_NOTHING, FIRE_ONCE_NOW, CATCH_UP).
    #[arg(long)]
    misfire: Option<String>,
    /// Timeout in seconds.
    #[arg(long)]
    timeout: Option<i64>,
    /// Retries after a failure.
    #[arg(long)]
    retries: Option<i64>,
    /// Child job ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    child: Option<Vec<i64>>,
    /// Script type (GLUE_SHELL, GLUE_PYTHON, …).
    #[arg(long)]
    glue_type: Option<String>,
    /// File holding the script source.
    #[arg(long)]
    glue_file: Option<std::path::PathBuf>,
    /// Priority in the queue of a full limit: higher goes first (-1000 to 1000, default 0).
    #[arg(long, allow_negative_numbers = true)]
    priority: Option<i64>,
    /// Concurrency key: the job's runs share the limit of this name (`chime limit set KEY N`)
    /// with every job of the same key. An empty value removes it.
    #[arg(long, value_name = "KEY")]
    concurrency_key: Option<String>,
    /// Start scheduling right away.
    #[arg(long)]
    start: bool,
    /// Any job field by its API name, as FIELD=VALUE (repeatable), e.g. `--set owner=ann
    /// --set retry_count=3`: text for a text field, JSON otherwise. Checked against the job
    /// body's fields and types before it is sent.
    #[arg(long = "set", value_name = "FIELD=VALUE")]
    set: Vec<String>,
}

#[derive(clap::Subcommand, Debug)]
enum JobCmd {
    /// Create a job.
    Add(JobFields),
    /// List jobs by id (all of them unless --limit is given; fetched in pages).
    List {
        /// Only jobs of this group (app name).
        #[arg(long)]
        group: Option<String>,
        /// At most this many.
        #[arg(long)]
        limit: Option<u64>,
        /// Start after this job id (the next page after a listing that ended at this id).
        #[arg(long, default_value_t = 0)]
        after_id: i64,
    },
    /// Show a job.
    Show {
        /// Job id.
        id: i64,
    },
    /// Change a job (only the fields given).
    #[command(visible_alias = "edit")]
    Update {
        /// Job id.
        id: i64,
        #[command(flatten)]
        fields: JobFields,
    },
    /// Start scheduling a job.
    Start {
        /// Job id.
        id: i64,
    },
    /// Stop scheduling a job.
    Stop {
        /// Job id.
        id: i64,
    },
    /// Pause a job until a time: fires due before then follow its misfire policy when it ends.
    Pause {
        /// Job id.
        id: i64,
        #[command(flatten)]
        end: pause::PauseEnd,
    },
    /// End a job's pause now.
    Resume {
        /// Job id.
        id: i64,
    },
    /// Delete a job with its runs.
    Rm {
        /// Job id.
        id: i64,
    },
    /// Run a job now.
    Trigger {
        /// Job id.
        id: i64,
        /// Parameter for this run.
        #[arg(long)]
        param: Option<String>,
        /// Executor address (one of the group's).
        #[arg(long)]
        address: Option<String>,
    },
    /// Backfill a job: run it once for every fire time its schedule had in a past range, each
    /// run at its fire time's date parameters; a fire time backfilled before is left out.
    Backfill {
        /// Job id.
        id: i64,
        #[command(flatten)]
        args: backfill::BackfillArgs,
    },
    /// List a job's backfills, newest first, with how far each got.
    Backfills {
        /// Job id.
        id: i64,
    },
    /// Cancel a running backfill: its fire times not started are let go; runs under way go on.
    BackfillCancel {
        /// Job id.
        id: i64,
        /// Backfill id.
        backfill: i64,
    },
    /// Next fire times.
    Next {
        /// Job id.
        id: i64,
        /// How many.
        #[arg(long, default_value_t = 5)]
        count: u32,
    },
}

/// `chime run …`
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(subcommand)]
    cmd: RunCmd,
}

#[derive(clap::Subcommand, Debug)]
enum RunCmd {
    /// List runs, newest first.
    List {
        /// Only runs of this job.
        #[arg(long)]
        job: Option<i64>,
        /// Only runs in this state (pending, running, success, failed, killed, skipped).
        #[arg(long)]
        status: Option<String>,
        /// At most this many (any number; fetched in pages).
        #[arg(long, default_value_t = 20)]
        limit: u64,
        /// Only runs older than this run id (the next page after a listing that ended at this id).
        #[arg(long)]
        before_id: Option<i64>,
    },
    /// Show a run.
    Show {
        /// Run id.
        id: i64,
    },
    /// Print a run's log (read from its executor).
    Log {
        /// Run id.
        id: i64,
        /// First line.
        #[arg(long, default_value_t = 1)]
        from_line: u32,
        /// Keep printing new lines until the run has ended and its log is complete (Ctrl-C
        /// stops earlier). With --json, one JSON object per slice read.
        #[arg(long, short = 'f')]
        follow: bool,
    },
    /// Kill a running run.
    Kill {
        /// Run id.
        id: i64,
    },
}

/// `chime executors …`
#[derive(clap::Args, Debug)]
pub struct ExecutorsArgs {
    #[command(subcommand)]
    cmd: Option<ExecutorsCmd>,
    /// Only this group (app name).
    #[arg(long)]
    group: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
enum ExecutorsCmd {
    /// List executors per group with their last heartbeat.
    List {
        /// Only this group (app name).
        #[arg(long)]
        group: Option<String>,
    },
}

/// `chime export`
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Only this group (app name).
    #[arg(long)]
    group: Option<String>,
    /// Write each script to DIR/<group>/<key>.<ext> and name it as `glue_file` instead of
    /// putting it inline (file names are written as given: relative to where the TOML goes).
    #[arg(long, value_name = "DIR")]
    glue_dir: Option<std::path::PathBuf>,
}

/// `chime apply`
#[derive(clap::Args, Debug)]
pub struct ApplyArgs {
    /// The TOML jobs document (its `glue_file`s are read relative to it).
    #[arg(long, short = 'f', value_name = "FILE")]
    file: std::path::PathBuf,
    /// Print what would change, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Also delete the jobs of the document's groups that it does not list.
    #[arg(long)]
    prune: bool,
}

struct Client {
    opts: ClientOpts,
    http: reqwest::Client,
}

#[derive(Debug)]
struct Failure(String);

/// An answer read into the API's type `T`.
fn read_answer<T: DeserializeOwned>(answer: Value) -> Result<T, Failure> {
    serde_json::from_value(answer).map_err(|e| Failure(format!("unexpected answer from the admin: {e}")))
}

impl Client {
    /// Sends `body`, one of the admin's wire types ([`chime_admin::api`]) or a request's body.
    async fn send(&self, method: Method, path: &str, body: &impl serde::Serialize) -> Result<Value, Failure> {
        let body = serde_json::to_value(body).map_err(|e| Failure(e.to_string()))?;
        self.call(method, path, Some(body)).await
    }

    /// Reads an answer into the API's type `T`.
    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Failure> {
        read_answer(self.call(Method::GET, path, None).await?)
    }

    /// Prints an answer: with `--json`, its JSON as the admin wrote it (an admin of another
    /// version may answer more fields, and a group's answer only says whether it has a
    /// token); for people, read into the API's type `T` and printed by `human`.
    fn print<T: DeserializeOwned>(&self, answer: Value, human: impl FnOnce(T)) -> Result<(), Failure> {
        if self.opts.json {
            outln!("{}", serde_json::to_string_pretty(&answer).unwrap_or_default());
        } else {
            human(read_answer(answer)?);
        }
        Ok(())
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Result<Value, Failure> {
        let text = self.call_text(method, path, body.map(Body::Json)).await?;
        Ok(if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        })
    }

    /// Sends a request, again while the admin answers 503; the answer's text as it came on
    /// success (also for a body or an answer that is a file rather than JSON, an `.ics`
    /// calendar), the admin's error with the field it names otherwise.
    async fn call_text(&self, method: Method, path: &str, body: Option<Body>) -> Result<String, Failure> {
        let url = format!("{}{}", self.opts.admin.trim_end_matches('/'), path);
        let mut attempt = 1;
        let resp = loop {
            let mut req = self.http.request(method.clone(), &url);
            if let Some(t) = &self.opts.api_token {
                req = req.bearer_auth(t);
            }
            req = match &body {
                Some(Body::Json(b)) => req.json(b),
                Some(Body::Text { content_type, text }) => req
                    .header(reqwest::header::CONTENT_TYPE, *content_type)
                    .body(text.clone()),
                None => req,
            };
            let resp = req
                .send()
                .await
                .map_err(|e| Failure(format!("cannot reach the admin at {}: {e}", self.opts.admin)))?;
            // The admin answers 503 only when its database was momentarily busy (a lock
            // conflict) and nothing was changed, so even a POST is safe to send again.
            if resp.status() != reqwest::StatusCode::SERVICE_UNAVAILABLE || attempt >= BUSY_ATTEMPTS {
                break resp;
            }
            let wait = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(1)
                .clamp(1, 10);
            tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
            attempt += 1;
        };
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if status.is_success() {
            return Ok(text);
        }
        let value: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        let msg = value["error"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| value.to_string());
        Err(Failure(match value["field"].as_str() {
            Some(f) => format!("{msg} (field: {f}; HTTP {})", status.as_u16()),
            None => format!("{msg} (HTTP {})", status.as_u16()),
        }))
    }
}

/// The body of a request: JSON, or a file's text with its media type.
enum Body {
    /// One of the admin's wire types, as JSON.
    Json(Value),
    /// A file as it is (`text/calendar` for an `.ics`).
    Text {
        /// Its media type.
        content_type: &'static str,
        /// Its text.
        text: String,
    },
}

/// First and longest wait between two reads of `run log --follow`: short while lines arrive,
/// doubling while nothing changes, so a long quiet run costs the admin and the executor one
/// request every few seconds.
const FOLLOW_POLL: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(2));

/// Whether a run status is final (no more log lines will be written).
fn is_final(status: RunStatus) -> bool {
    !matches!(status, RunStatus::Pending | RunStatus::Running)
}

/// `run log --follow`: prints the log from `from_line` and then each new slice, until the
/// run is final and the log read after that is printed. A run not yet sent to an executor is
/// waited for.
async fn follow_log(c: &Client, id: i64, from_line: u32) -> Result<(), Failure> {
    let mut next_line = i64::from(from_line.max(1));
    let mut wait = FOLLOW_POLL.0;
    loop {
        let run: Run = c.get(&format!("/v1/runs/{id}")).await?;
        let sent = !run.executor_address.is_empty();
        let mut grew = false;
        if sent {
            let slice = c
                .call(Method::GET, &format!("/v1/runs/{id}/log?from_line={next_line}"), None)
                .await?;
            let content = slice["content"].as_str().unwrap_or("");
            let to_line = slice["to_line"].as_i64().unwrap_or(next_line - 1);
            if c.opts.json {
                if !content.is_empty() || slice["is_end"].as_bool() == Some(true) {
                    outln!("{slice}");
                }
            } else {
                out!("{}", br_lines(content, ""));
            }
            if to_line >= next_line && !content.is_empty() {
                next_line = to_line + 1;
                grew = true;
            }
            // The run was read before this slice: when it was final then, the slice holds
            // the end of the log even if the executor does not say so (a run refused at
            // trigger has no result code, so the admin never marks its log complete).
            if slice["is_end"].as_bool() == Some(true) || is_final(run.status) {
                return Ok(());
            }
        } else if is_final(run.status) {
            return Err(Failure(format!(
                "run {id} ended ({}) without being sent to an executor, so it has no log: {}",
                wire_name(&run.status),
                br_lines(&run.trigger_msg, " ")
            )));
        }
        wait = if grew {
            FOLLOW_POLL.0
        } else {
            (wait * 2).min(FOLLOW_POLL.1)
        };
        tokio::time::sleep(wait).await;
    }
}

/// How long `chime job trigger` waits to learn whether its run was sent: longer than the admin's
/// default executor timeout (3 s), so a run it could not send is seen failed.
const TRIGGER_OUTCOME_WAIT: Duration = Duration::from_secs(10);

/// Waits until the admin tried to send a triggered run. A run it could not send (no executor
/// online, the executor refused it) fails the command, with the admin's reason: a script that
/// triggers a job must not read success from a run that never started. A run not tried within
/// [`TRIGGER_OUTCOME_WAIT`] (the admin busy) leaves the command successful, with a note; so
/// does a run waiting in the queue for a slot of a full limit, which may wait far longer.
async fn trigger_outcome(c: &Client, run: i64) -> Result<(), Failure> {
    let deadline = tokio::time::Instant::now() + TRIGGER_OUTCOME_WAIT;
    let mut poll: u32 = 0;
    loop {
        poll += 1;
        let sent: Run = c.get(&format!("/v1/runs/{run}")).await?;
        match sent.trigger_code {
            200 => return Ok(()),
            0 => {}
            _ => {
                return Err(Failure(format!(
                    "run {run} could not be sent to an executor: {}",
                    br_lines(&sent.trigger_msg, " ")
                )))
            }
        }
        // A queued run looks like one not yet tried: the queue tells them apart. Asked every
        // [`QUEUE_CHECK_EVERY`] polls, as most runs are sent before the first.
        if poll % QUEUE_CHECK_EVERY == 0 {
            if let Some(entry) = flow::queued_entry(c, run).await? {
                eprintln!(
                    "chime: run {run} waits in the queue for a slot of the limit '{}' (place {}; `chime queue` lists it)",
                    entry.waits_on, entry.position
                );
                return Ok(());
            }
        }
        if tokio::time::Instant::now() >= deadline {
            eprintln!(
                "chime: run {run} was not sent within {} s; `chime run show {run}` tells what became of it",
                TRIGGER_OUTCOME_WAIT.as_secs()
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every how many polls of [`trigger_outcome`] (100 ms apart) the queue is asked about the run.
const QUEUE_CHECK_EVERY: u32 = 5;

/// How many times a request is sent while the admin answers 503 (database busy).
const BUSY_ATTEMPTS: u32 = 3;

/// Most rows asked of the REST API per request when a listing is fetched page by page.
const PAGE: u64 = 1000;

impl Client {
    /// The admin's groups by id, to show names instead of ids. Empty when the listing fails:
    /// the table then shows ids, and the command's own request reports any real problem.
    async fn group_names(&self) -> GroupNames {
        let groups: Vec<GroupAnswer> = self.get("/v1/groups").await.unwrap_or_default();
        GroupNames(groups.into_iter().map(|g| (g.group.id, g.group.app_name)).collect())
    }

    /// Fetches a listing page by page, following the id of the last row of each page, until
    /// `limit` rows (all when `None`) or the end. The rows are answered as the admin wrote them
    /// (for `--json`); [`Client::print`] reads them into their type. `path(cursor, n)` is the request for `n` rows
    /// after `cursor`. When the limit ends the listing early, a hint on standard error says how
    /// to get the next page (`--{cursor_flag} ID`).
    async fn pages(
        &self,
        limit: Option<u64>,
        mut cursor: i64,
        path: impl Fn(i64, u64) -> String,
        cursor_flag: &str,
    ) -> Result<Value, Failure> {
        let mut rows: Vec<Value> = Vec::new();
        loop {
            let want = limit.map_or(PAGE, |l| (l - rows.len() as u64).min(PAGE));
            if want == 0 {
                break;
            }
            let page: Vec<Value> = self.get(&path(cursor, want)).await?;
            let got = page.len() as u64;
            rows.extend(page);
            match rows.last().and_then(|r| r["id"].as_i64()) {
                Some(last) if got == want => cursor = last,
                _ => return Ok(Value::Array(rows)),
            }
        }
        if limit.is_some_and(|l| l > 0) {
            eprintln!("chime: more may follow: add --{cursor_flag} {cursor}");
        }
        Ok(Value::Array(rows))
    }
}

/// The `--alarm-email` list as the job's alarm contacts: comma-separated addresses, each
/// checked for the shape of an e-mail address, so a typo is refused here instead of being
/// skipped when an alarm is due.
fn alarm_contacts(list: &str) -> Result<String, Failure> {
    let mut out = Vec::new();
    for item in list.split([',', ';']).map(str::trim).filter(|s| !s.is_empty()) {
        let valid = match item.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.is_empty()
                    && !domain.contains('@')
                    && !item.chars().any(|c| c.is_whitespace() || c.is_control())
            }
            None => false,
        };
        if !valid {
            return Err(Failure(format!("--alarm-email: '{item}' is not an e-mail address")));
        }
        out.push(item);
    }
    Ok(out.join(","))
}

async fn dispatch(c: &Client, cmd: ClientCommand) -> Result<(), Failure> {
    match cmd {
        ClientCommand::Workflow(args) => workflow::dispatch(c, args.cmd).await,
        ClientCommand::ApiKey(args) => api_key::dispatch(c, args.cmd).await,
        ClientCommand::Calendar(args) => calendar::dispatch(c, args.cmd).await,
        ClientCommand::Limit(args) => flow::limit_cmd(c, args.cmd).await,
        ClientCommand::Queue(args) => flow::queue_cmd(c, args.cmd.unwrap_or(flow::QueueCmd::List)).await,
        ClientCommand::Group(args) => group_cmd(c, args.cmd).await,
        ClientCommand::Job(args) => job_cmd(c, args.cmd).await,
        ClientCommand::Run(args) => run_cmd(c, args.cmd).await,
        ClientCommand::Executors(args) => {
            let group = match args.cmd {
                Some(ExecutorsCmd::List { group }) => group.or(args.group),
                None => args.group,
            };
            executors(c, group).await
        }
        ClientCommand::Export(args) => export(c, args).await,
        ClientCommand::Apply(args) => apply(c, args).await,
    }
}

/// `chime group …`
async fn group_cmd(c: &Client, cmd: GroupCmd) -> Result<(), Failure> {
    let print_group = |g: GroupAnswer| print_groups(&[g]);
    match cmd {
        GroupCmd::Add {
            appname,
            fields,
            insecure_no_token,
        } => {
            let body = GroupSpec {
                app_name: Some(appname),
                insecure_no_token: insecure_no_token.then_some(true),
                ..job_body::group_spec(fields)
            };
            c.print(c.send(Method::POST, "/v1/groups", &body).await?, print_group)
        }
        GroupCmd::Update {
            group,
            fields,
            insecure_no_token,
            require_token,
        } => {
            let body = GroupSpec {
                insecure_no_token: (insecure_no_token || require_token).then_some(insecure_no_token),
                ..job_body::group_spec(fields)
            };
            let answer = c.send(Method::PUT, &format!("/v1/groups/{group}"), &body).await?;
            c.print(answer, print_group)
        }
        GroupCmd::List => c.print(c.call(Method::GET, "/v1/groups", None).await?, |groups: Vec<_>| {
            print_groups(&groups)
        }),
        GroupCmd::Rm { group } => {
            c.call(Method::DELETE, &format!("/v1/groups/{group}"), None).await?;
            c.print(json!({ "deleted": group }), |_: Value| outln!("deleted group {group}"))
        }
        GroupCmd::Pause { group, end } => {
            let answer = c
                .send(Method::POST, &format!("/v1/groups/{group}/pause"), &end.body()?)
                .await?;
            c.print(answer, |v: Value| {
                outln!(
                    "paused {} jobs of group {group} until {}",
                    cell(&v["jobs"]),
                    time(v["paused_until"].as_i64().unwrap_or_default())
                )
            })
        }
        GroupCmd::Resume { group } => {
            let answer = c
                .call(Method::POST, &format!("/v1/groups/{group}/resume"), None)
                .await?;
            c.print(answer, |v: Value| {
                outln!("resumed {} jobs of group {group}", cell(&v["jobs"]))
            })
        }
    }
}

/// `chime job …`
async fn job_cmd(c: &Client, cmd: JobCmd) -> Result<(), Failure> {
    // Job tables name groups; the listing is fetched only for people, not for --json.
    let groups = match &cmd {
        JobCmd::Rm { .. }
        | JobCmd::Trigger { .. }
        | JobCmd::Next { .. }
        | JobCmd::Backfill { .. }
        | JobCmd::Backfills { .. }
        | JobCmd::BackfillCancel { .. } => GroupNames::default(),
        _ if !c.opts.json => c.group_names().await,
        _ => GroupNames::default(),
    };
    let print_job = |job: Job| print_jobs(&[job], &groups);
    match cmd {
        JobCmd::Add(f) => c.print(
            c.send(Method::POST, "/v1/jobs", &job_body::job_spec(&f, true)?).await?,
            print_job,
        ),
        JobCmd::List { group, limit, after_id } => {
            let filter = match group {
                Some(g) => format!("&group={g}"),
                None => String::new(),
            };
            let jobs = c
                .pages(
                    limit,
                    after_id,
                    |after, n| format!("/v1/jobs?limit={n}&after_id={after}{filter}"),
                    "after-id",
                )
                .await?;
            c.print(jobs, |jobs: Vec<Job>| print_jobs(&jobs, &groups))
        }
        JobCmd::Show { id } => {
            let answer = c.call(Method::GET, &format!("/v1/jobs/{id}"), None).await?;
            if c.opts.json {
                return c.print(answer, |_: Value| {});
            }
            let job: Job = read_answer(answer)?;
            // Next fire times only for a job that has them (a stopped or manual job's list is
            // empty; a failure here must not hide the job itself).
            let next = if job.running {
                c.call(Method::GET, &format!("/v1/jobs/{id}/next?count=5"), None)
                    .await
                    .ok()
            } else {
                None
            };
            print_job_detail(&job, &groups, next.as_ref());
            Ok(())
        }
        JobCmd::Update { id, fields } => {
            let body = job_body::job_spec(&fields, false)?;
            c.print(c.send(Method::PUT, &format!("/v1/jobs/{id}"), &body).await?, print_job)
        }
        JobCmd::Start { id } => c.print(
            c.call(Method::POST, &format!("/v1/jobs/{id}/start"), None).await?,
            print_job,
        ),
        JobCmd::Stop { id } => c.print(
            c.call(Method::POST, &format!("/v1/jobs/{id}/stop"), None).await?,
            print_job,
        ),
        JobCmd::Pause { id, end } => c.print(
            c.send(Method::POST, &format!("/v1/jobs/{id}/pause"), &end.body()?)
                .await?,
            print_job,
        ),
        JobCmd::Resume { id } => c.print(
            c.call(Method::POST, &format!("/v1/jobs/{id}/resume"), None).await?,
            print_job,
        ),
        JobCmd::Rm { id } => {
            c.call(Method::DELETE, &format!("/v1/jobs/{id}"), None).await?;
            c.print(json!({ "deleted": id }), |_: Value| outln!("deleted job {id}"))
        }
        JobCmd::Backfill { id, args } => backfill::start(c, &format!("/v1/jobs/{id}"), args).await,
        JobCmd::Backfills { id } => backfill::list(c, &format!("/v1/jobs/{id}")).await,
        JobCmd::BackfillCancel { id, backfill } => backfill::cancel(c, &format!("/v1/jobs/{id}"), backfill).await,
        JobCmd::Trigger { id, param, address } => {
            let body = TriggerBody {
                param,
                address,
                ..TriggerBody::MANUAL
            };
            let answer = c.send(Method::POST, &format!("/v1/jobs/{id}/trigger"), &body).await?;
            let run = answer["run_id"].as_i64();
            c.print(answer, |v: Value| {
                outln!("triggered job {id}: run {}", cell(&v["run_id"]))
            })?;
            match run {
                Some(run) => trigger_outcome(c, run).await,
                None => Ok(()),
            }
        }
        JobCmd::Next { id, count } => {
            let answer = c
                .call(Method::GET, &format!("/v1/jobs/{id}/next?count={count}"), None)
                .await?;
            c.print(answer, |v: Value| {
                let tz = v["time_zone"].as_str().unwrap_or("");
                let rows = next_fire_times(Some(&v))
                    .into_iter()
                    .map(|(at, param)| vec![at.to_string(), zoned(at, tz), param])
                    .collect();
                table(&["EPOCH MS", "TIME", "PARAM"], rows);
                let skipped: Vec<Vec<String>> = skipped_days(Some(&v))
                    .into_iter()
                    .map(|(at, why)| vec![zoned(at, tz), why])
                    .collect();
                if !skipped.is_empty() {
                    outln!("\nskipped by calendar {}:", v["calendar"].as_str().unwrap_or(""));
                    table(&["FIRST FIRE LEFT OUT", "WHY"], skipped);
                }
            })
        }
    }
}

/// The body of a trigger request (of a job or a workflow).
#[derive(serde::Serialize)]
struct TriggerBody {
    /// Always `MANUAL`: a person asked for the run.
    trigger_type: &'static str,
    /// The parameter of this run instead of the job's.
    #[serde(skip_serializing_if = "Option::is_none")]
    param: Option<String>,
    /// The executor to send it to.
    #[serde(skip_serializing_if = "Option::is_none")]
    address: Option<String>,
}

impl TriggerBody {
    /// A person's trigger, with nothing else given.
    const MANUAL: TriggerBody = TriggerBody {
        trigger_type: "MANUAL",
        param: None,
        address: None,
    };
}

/// `chime run …`
async fn run_cmd(c: &Client, cmd: RunCmd) -> Result<(), Failure> {
    match cmd {
        RunCmd::List {
            job,
            status,
            limit,
            before_id,
        } => {
            let mut filter = String::new();
            if let Some(j) = job {
                filter.push_str(&format!("&job_id={j}"));
            }
            if let Some(s) = status {
                filter.push_str(&format!("&status={s}"));
            }
            // Runs come newest first, so the cursor goes down; 0 stands for "from the newest".
            let runs = c
                .pages(
                    Some(limit),
                    before_id.unwrap_or(0),
                    |before, n| {
                        let cursor = if before > 0 {
                            format!("&before_id={before}")
                        } else {
                            String::new()
                        };
                        format!("/v1/runs?limit={n}{cursor}{filter}")
                    },
                    "before-id",
                )
                .await?;
            c.print(runs, |runs: Vec<Run>| print_runs(&runs))
        }
        RunCmd::Show { id } => c.print(
            c.call(Method::GET, &format!("/v1/runs/{id}"), None).await?,
            |run: Run| print_run_detail(&run),
        ),
        RunCmd::Log {
            id,
            from_line,
            follow: false,
        } => {
            let answer = c
                .call(Method::GET, &format!("/v1/runs/{id}/log?from_line={from_line}"), None)
                .await?;
            c.print(answer, |v: Value| {
                out!("{}", br_lines(v["content"].as_str().unwrap_or(""), ""))
            })
        }
        RunCmd::Log {
            id,
            from_line,
            follow: true,
        } => {
            tokio::select! {
                r = follow_log(c, id, from_line) => r,
                _ = tokio::signal::ctrl_c() => {
                    // What a shell reports for a command ended by Ctrl-C (128 + SIGINT), after
                    // the lines already read are out.
                    use std::io::Write;
                    let _ = std::io::stdout().flush();
                    std::process::exit(130);
                }
            }
        }
        RunCmd::Kill { id } => c.print(
            c.call(Method::POST, &format!("/v1/runs/{id}/kill"), None).await?,
            |run: Run| print_runs(&[run]),
        ),
    }
}

/// `chime executors [--group A]`: each group's executors, with their last heartbeat.
async fn executors(c: &Client, group: Option<String>) -> Result<(), Failure> {
    let path = match group {
        Some(g) => format!("/v1/executors?group={g}"),
        None => "/v1/executors".to_owned(),
    };
    c.print(c.call(Method::GET, &path, None).await?, |v: Value| {
        let mut rows = Vec::new();
        for g in v.as_array().into_iter().flatten() {
            let list = g["executors"].as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                rows.push(vec![
                    cell(&g["app_name"]),
                    "(none)".into(),
                    String::new(),
                    String::new(),
                ]);
            }
            for e in list {
                // A linked executor dialed the admins: its source says so.
                let source = if e["linked"] == true {
                    format!("{} (linked)", cell(&e["source"]))
                } else {
                    cell(&e["source"])
                };
                rows.push(vec![
                    cell(&g["app_name"]),
                    cell(&e["address"]),
                    source,
                    time(e["last_heartbeat"].as_i64().unwrap_or_default()),
                ]);
            }
        }
        table(&["GROUP", "ADDRESS", "SOURCE", "LAST HEARTBEAT"], rows);
    })
}

/// `chime export`: the jobs document as TOML (or as the admin's JSON with `--json`).
async fn export(c: &Client, args: ExportArgs) -> Result<(), Failure> {
    let path = match &args.group {
        Some(g) => format!("/v1/export?group={}", query_value(g)),
        None => "/v1/export".to_owned(),
    };
    let answer = c.call(Method::GET, &path, None).await?;
    if c.opts.json {
        return c.print(answer, |_: Value| {});
    }
    let doc: JobsDocument = read_answer(answer)?;
    let text = jobs_doc::to_toml(&doc, args.glue_dir.as_deref()).map_err(Failure)?;
    outln!("{}", text.trim_end());
    Ok(())
}

/// The body of `POST /v1/apply`: a jobs document and what to do with it.
#[derive(serde::Serialize)]
struct ApplyBody {
    #[serde(flatten)]
    doc: JobsDocument,
    dry_run: bool,
    prune: bool,
}

/// `chime apply -f FILE`: sends the document and prints the plan.
async fn apply(c: &Client, args: ApplyArgs) -> Result<(), Failure> {
    let body = ApplyBody {
        doc: jobs_doc::read_document(&args.file).map_err(Failure)?,
        dry_run: args.dry_run,
        prune: args.prune,
    };
    let answer = c
        .send(Method::POST, "/v1/apply", &body)
        .await
        .map_err(|Failure(m)| Failure(jobs_doc::in_file(&args.file, m)))?;
    c.print(answer, |plan: ApplyPlan| jobs_doc::print_plan(&plan))
}

/// The commands that work through the admin's REST API, one variant a command; the CLI's
/// command list takes them in as they are (`#[command(flatten)]` in `main.rs`).
#[derive(clap::Subcommand, Debug)]
pub enum ClientCommand {
    /// Manage executor groups through the admin's REST API.
    Group(GroupArgs),
    /// Manage jobs through the admin's REST API.
    // Boxed: the job fields would make every other command as large.
    Job(Box<JobArgs>),
    /// Inspect runs: list, show, log, kill.
    Run(RunArgs),
    /// Print the admin's groups and jobs as a TOML jobs document (see docs/jobs-as-code.md).
    Export(ExportArgs),
    /// Apply a TOML jobs document: create, update (and with --prune delete) jobs, all or nothing.
    Apply(ApplyArgs),
    /// Manage workflows (jobs as a DAG) and their instances through the admin's REST API.
    Workflow(WorkflowArgs),
    /// Make, list and revoke API keys through the admin's REST API.
    ApiKey(ApiKeyArgs),
    /// Manage business calendars (holidays and make-up workdays) through the admin's REST API.
    Calendar(CalendarArgs),
    /// Set, list and delete limits on running runs (flow control) through the admin's REST API.
    Limit(LimitArgs),
    /// Show the runs waiting for a slot of a full limit; send one now or cancel it.
    Queue(QueueArgs),
    /// Same as `executor list`.
    #[command(hide = true)]
    Executors(ExecutorsArgs),
}

/// Runs one client command against the admin; prints what failed and answers failure when
/// it did.
pub fn run(opts: ClientOpts, cmd: ClientCommand) -> ExitCode {
    let Some(runtime) = crate::start_runtime("chime", crate::Threads::One) else {
        return ExitCode::FAILURE;
    };
    let client = Client {
        opts,
        http: reqwest::Client::new(),
    };
    match runtime.block_on(dispatch(&client, cmd)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg)) => {
            eprintln!("chime: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// A query parameter's value or a path segment, percent-encoded (every byte but `A-Z a-z 0-9
/// - _ . ~`, so `:` and `/` of a limit's name stay inside its segment).
fn query_value(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Runs `chime executor list [--group A]`.
pub fn run_executor_list(opts: ClientOpts, group: Option<String>) -> ExitCode {
    run(opts, ClientCommand::Executors(ExecutorsArgs { cmd: None, group }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn br_in_any_spelling_is_a_line_break() {
        assert_eq!(br_lines("a<br>b<BR/>c<br />d", ""), "a\nb\nc\nd");
        assert_eq!(br_lines("a<br><br>b", "  "), "a\n\n  b");
        assert_eq!(br_lines("<<<<<br>x < y <b>", ""), "<<<<\nx < y <b>");
        assert_eq!(br_lines("a<br", ""), "a<br");
    }

    #[test]
    fn times_are_in_the_named_zone() {
        let at = 1_795_570_200_000_i64;
        assert_eq!(zoned(at, "Asia/Shanghai"), "2026-11-25 09:30:00 Asia/Shanghai");
        assert_eq!(zoned(at, "Europe/Berlin"), "2026-11-25 02:30:00 Europe/Berlin");
        assert_eq!(zoned(at, "Not/AZone"), "2026-11-25 01:30:00 UTC");
        assert_eq!(zoned(0, "UTC"), "-");
    }

    #[test]
    fn alarm_emails_are_checked() {
        assert_eq!(alarm_contacts(" a@x.org ; b@y.org,").unwrap(), "a@x.org,b@y.org");
        assert_eq!(alarm_contacts("").unwrap(), "");
        for bad in ["ops", "@x.org", "a@", "a b@x.org", "a@b@c"] {
            assert!(alarm_contacts(bad).is_err(), "{bad}");
        }
    }
}
