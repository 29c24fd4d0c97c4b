//! Chime's executor SDK: run jobs for a Chime or XXL-JOB (2.4.x through 3.4.x) scheduling center.
//!
//! An executor is a small HTTP server inside your service. The admin (scheduling center)
//! calls it to start a run (`POST /run`), ask whether a job is busy, kill it, or read a run's
//! log; the executor runs the named handler and reports the result back to the admin
//! (`/api/callback`). It speaks XXL-JOB 2.4's wire protocol exactly (and serves `/log` to the
//! 3.3–3.4 admins too), so it works against an XXL-JOB admin as well as against Chime's.
//!
//! What it does for you, and why:
//! - **one runner per job id** with XXL-JOB's block strategies (serial, discard later, cover
//!   early), timeouts and kill — and kill really stops async handlers and whole script
//!   process groups, instead of setting a flag;
//! - **run logs**, one file per run (`LOGDIR/yyyy-MM-dd/<runId>.log`, as XXL-JOB writes them;
//!   short runs' logs can be packed for throughput), that the admin's console pages while the
//!   run writes them;
//! - **results are never lost**: each is written to an fsync'd spool before it is sent, and
//!   re-sent in order until an admin accepts it, across crashes and restarts;
//! - **registry heartbeat** and `registryRemove` on graceful shutdown;
//! - **script jobs** (shell, Python, Node.js, PHP, PowerShell) — off unless enabled, because
//!   they let anyone holding the access token run code on this host; enabling them (or the
//!   `shell` handler) requires an access token, on loopback too;
//! - **only scheduling centers are served**: requests whose body is not `application/json`, or
//!   that carry a browser's `Origin` or `Sec-Fetch-Site` header, are refused, so a web page
//!   cannot make a browser call the executor.
//!
//! Against a Chime admin it can instead run in **link mode** ([`ExecutorBuilder::link`]): it
//! opens no port, dials every admin and keeps one WebSocket to each, over which the admin calls
//! it and it reports back — for executors no admin can reach (containers, NAT). HTTP mode stays
//! the default, and the one an XXL-JOB admin speaks.
//!
//! It is not a scheduler: when to run is the admin's business.
//!
//! ```no_run
//! use chime_executor::{Executor, JobContext, JobResult};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     Executor::builder()
//!         .admin_addresses(["http://127.0.0.1:8080/xxl-job-admin"])
//!         .app_name("billing-jobs")
//!         .access_token("change-me")
//!         .listen("0.0.0.0:9999".parse()?)
//!         .advertise("http://billing.internal:9999") // what the admin can reach
//!         .handler("closeInvoices", |ctx: JobContext| async move {
//!             ctx.log(format!("closing invoices for {}", ctx.param()));
//!             // `?` works on any error that implements Display: it becomes a failure.
//!             let closed: u32 = ctx.param().parse().map_err(|e| format!("bad param: {e}"))?;
//!             Ok::<_, String>(JobResult::success_with(format!("closed {closed}")))
//!         })
//!         .build()?
//!         .run() // until SIGTERM / Ctrl-C, then a graceful shutdown
//!         .await?;
//!     Ok(())
//! }
//! ```
#![deny(missing_docs)]

mod address;
mod admin;
mod callback;
mod declare;
#[cfg(feature = "demo")]
pub mod demo;
mod executor;
mod handler;
mod link;
mod logship;
mod registry;
mod runlog;
mod runner;
pub mod script;
mod server;
mod spool;
mod token;

// The examples of the README and of docs/executor.md, compiled by `cargo test --doc` so that
// they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../../../docs/executor.md")]
struct ExecutorGuideDoctests;

pub use address::{detect_ipv4, normalize_advertised};
pub use declare::JobDeclaration;
pub use executor::{termination_signal, Executor, ExecutorBuilder, ExecutorError, ExecutorHandle};
pub use handler::{Handler, IntoJobResult, JobContext, JobResult};
pub use runlog::{day_dir_name, run_log_path};
pub use token::generate_access_token;
