//! `chime cron next`: the next fire times of a Quartz cron expression, one per line, or the
//! `--batch` line protocol on stdin/stdout (see `chime_cron::batch`).

use chime_cron::batch::Batch;
use chime_cron::{parse_zone, CronExpr};
use chrono::{SecondsFormat, TimeZone};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;

/// Arguments of `chime cron`.
#[derive(clap::Args)]
pub struct CronArgs {
    #[command(subcommand)]
    command: CronCommand,
}

#[derive(clap::Subcommand)]
enum CronCommand {
    /// Print the next fire times of a Quartz cron expression, as Quartz 2.3 computes them.
    ///
    /// Prints one epoch-millisecond time per line (fewer than --count when the schedule ends).
    /// An invalid expression or zone is reported on stderr with exit code 2.
    Next(NextArgs),
}

#[derive(clap::Args)]
struct NextArgs {
    /// Quartz cron expression: "SEC MIN HOUR DAY-OF-MONTH MONTH DAY-OF-WEEK [YEAR]", e.g.
    /// "0 */5 * * * ?". Omitted with --batch.
    #[arg(required_unless_present = "batch")]
    expr: Option<String>,

    /// IANA time zone the expression is evaluated in [default: the machine's zone].
    #[arg(long, value_name = "ZONE")]
    tz: Option<String>,

    /// Print the fire times strictly after this instant, in epoch milliseconds [default: now].
    #[arg(long, value_name = "EPOCH_MS", allow_negative_numbers = true)]
    after: Option<i64>,

    /// How many fire times to print (at least 1, as in --batch).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    count: u32,

    /// Print RFC 3339 times in the zone (e.g. 2026-03-08T03:00:00-04:00) instead of epoch ms.
    #[arg(long)]
    human: bool,

    /// Read "EXPR<TAB>ZONE<TAB>AFTER_MS<TAB>COUNT" lines on stdin and write
    /// "EXPR<TAB>ZONE<TAB>AFTER_MS<TAB>t1,t2,…" (or "…<TAB>INVALID") lines on stdout.
    #[arg(long, conflicts_with_all = ["expr", "tz", "after", "count", "human"])]
    batch: bool,
}

/// Runs `chime cron`.
pub fn run(args: CronArgs) -> ExitCode {
    match args.command {
        CronCommand::Next(next) if next.batch => batch(),
        CronCommand::Next(next) => print_next(next),
    }
}

fn print_next(args: NextArgs) -> ExitCode {
    let expr_text = args.expr.unwrap_or_default();
    let zone_name = args.tz.unwrap_or_else(chime_cron::local_zone_name);
    let tz = match parse_zone(&zone_name) {
        Ok(tz) => tz,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let expr = match CronExpr::parse(&expr_text) {
        Ok(expr) => expr,
        Err(e) => {
            eprintln!("error: invalid cron expression '{expr_text}': {e}");
            return ExitCode::from(2);
        }
    };
    let after = args.after.unwrap_or_else(|| chrono::Utc::now().timestamp_millis());

    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for t in expr.iter_after(after, tz).take(args.count as usize) {
        let written = if args.human {
            match tz.timestamp_millis_opt(t).single() {
                Some(local) => writeln!(out, "{}", local.to_rfc3339_opts(SecondsFormat::Secs, false)),
                None => writeln!(out, "{t}"),
            }
        } else {
            writeln!(out, "{t}")
        };
        if written.is_err() {
            // Closed pipe (e.g. `| head`): nothing more to say.
            return ExitCode::SUCCESS;
        }
    }
    let _ = out.flush();
    ExitCode::SUCCESS
}

fn batch() -> ExitCode {
    let stdin = std::io::stdin();
    let mut input = BufReader::with_capacity(1 << 16, stdin.lock());
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut answerer = Batch::new();
    let mut raw = Vec::with_capacity(256);
    let mut answer = String::with_capacity(256);
    loop {
        raw.clear();
        match input.read_until(b'\n', &mut raw) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("error: reading stdin: {e}");
                return ExitCode::FAILURE;
            }
        }
        if raw.last() == Some(&b'\n') {
            raw.pop();
        }
        // Not UTF-8: still one INVALID answer per line, never a crash.
        let line = String::from_utf8_lossy(&raw);
        answer.clear();
        answerer.answer_into(&line, &mut answer);
        answer.push('\n');
        if out.write_all(answer.as_bytes()).is_err() {
            return ExitCode::SUCCESS;
        }
    }
    if out.flush().is_err() {
        return ExitCode::SUCCESS;
    }
    ExitCode::SUCCESS
}
