//! `chime job|workflow backfill ID --from TIME --to TIME`: run a job (a workflow) once for
//! every fire time its schedule had in a past range; `backfills ID` lists them,
//! `backfill-cancel ID BACKFILL` cancels one.

use super::output::{table, time};
use super::pause::instant;
use super::{read_answer, Client, Failure};
use chime_admin::api::{Backfill, BackfillState};
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

/// How often `--wait` asks how far a backfill got.
const WAIT_POLL: Duration = Duration::from_secs(1);

/// What `chime job|workflow backfill` takes besides the job or workflow.
#[derive(Debug, clap::Args)]
pub(super) struct BackfillArgs {
    /// The range's first instant (a fire time at it is included): RFC 3339
    /// (`2026-11-01T00:00:00+08:00`) or epoch milliseconds.
    #[arg(long)]
    from: String,
    /// The range's last instant (included), not in the future: RFC 3339 or epoch milliseconds.
    #[arg(long)]
    to: String,
    /// At most this many runs under way at once (1–100).
    #[arg(long, default_value_t = 1)]
    at_once: i64,
    /// Newest fire times first.
    #[arg(long)]
    newest_first: bool,
    /// Wait until every fire time has run, printing progress; exits 1 if any run failed.
    #[arg(long)]
    wait: bool,
}

/// Starts a backfill of the job or workflow at `of` (`/v1/jobs/7`), and with `--wait` follows it
/// to its end: a failure when it was cancelled or a run of it failed.
pub(super) async fn start(c: &Client, of: &str, args: BackfillArgs) -> Result<(), Failure> {
    let body = json!({
        "from": instant("--from", &args.from)?,
        "to": instant("--to", &args.to)?,
        "at_once": args.at_once,
        "newest_first": args.newest_first,
    });
    let answer = c.call(Method::POST, &format!("{of}/backfills"), Some(body)).await?;
    if !args.wait {
        return c.print(answer, |b: Backfill| print_backfills(&[b]));
    }
    let mut backfill: Backfill = read_answer(answer)?;
    let mut shown = None;
    loop {
        let progress = (backfill.waiting, backfill.running, backfill.succeeded, backfill.failed);
        if shown != Some(progress) && !c.opts.json {
            outln!("{}", progress_line(&backfill));
            shown = Some(progress);
        }
        if backfill.state != BackfillState::Running {
            break;
        }
        tokio::time::sleep(WAIT_POLL).await;
        backfill = c.get(&format!("{of}/backfills/{}", backfill.id)).await?;
    }
    if c.opts.json {
        outln!("{}", serde_json::to_string_pretty(&backfill).unwrap_or_default());
    }
    match (backfill.state, backfill.failed) {
        (BackfillState::Done, 0) => Ok(()),
        (BackfillState::Done, failed) => Err(Failure(format!("backfill {}: {failed} runs failed", backfill.id))),
        _ => Err(Failure(format!("backfill {} was cancelled", backfill.id))),
    }
}

/// Lists the backfills of the job or workflow at `of`, newest first.
pub(super) async fn list(c: &Client, of: &str) -> Result<(), Failure> {
    let answer = c.call(Method::GET, &format!("{of}/backfills"), None).await?;
    c.print(answer, |all: Vec<Backfill>| print_backfills(&all))
}

/// Cancels backfill `backfill` of the job or workflow at `of`.
pub(super) async fn cancel(c: &Client, of: &str, backfill: i64) -> Result<(), Failure> {
    let path = format!("{of}/backfills/{backfill}/cancel");
    let answer = c.call(Method::POST, &path, None).await?;
    c.print(answer, |b: Backfill| print_backfills(&[b]))
}

/// One line of `--wait`'s progress.
fn progress_line(b: &Backfill) -> String {
    format!(
        "backfill {} of {}: {} — {} fire times: {} succeeded, {} failed, {} running, {} waiting",
        b.id,
        target(b),
        b.state.as_str(),
        b.fires,
        b.succeeded,
        b.failed,
        b.running,
        b.waiting
    )
}

/// `job 7` or `workflow 3`.
fn target(b: &Backfill) -> String {
    match (b.job_id, b.workflow_id) {
        (Some(job), _) => format!("job {job}"),
        (_, Some(workflow)) => format!("workflow {workflow}"),
        _ => String::new(),
    }
}

fn print_backfills(all: &[Backfill]) {
    let rows = all
        .iter()
        .map(|b| {
            vec![
                b.id.to_string(),
                target(b),
                b.state.as_str().to_owned(),
                time(b.from),
                time(b.to),
                format!("{}{}", b.at_once, if b.newest_first { " newest first" } else { "" }),
                b.fires.to_string(),
                b.already.to_string(),
                b.succeeded.to_string(),
                b.failed.to_string(),
                b.running.to_string(),
                b.waiting.to_string(),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "JOB",
            "STATE",
            "FROM",
            "TO",
            "AT ONCE",
            "FIRES",
            "DONE BEFORE",
            "SUCCEEDED",
            "FAILED",
            "RUNNING",
            "WAITING",
        ],
        rows,
    );
}
