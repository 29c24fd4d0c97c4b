//! Chime's scheduling center as a library: storage, scheduler, dispatch, executor API, REST API.
//!
//! The life of a fire (see `ARCHITECTURE.md`): [`schedule`] claims due fires into run rows in
//! the same transaction that advances the job's next fire time ([`store`]); a millisecond timer
//! ([`schedule::wheel`]) hands them to [`dispatch`], which routes and calls the executor; the
//! executor's callback arrives at [`http::executor_api`] and is recorded by [`results`], which
//! also creates retries and child runs; [`monitor`] fails runs whose executor vanished;
//! [`alarm`] tells people about runs that failed for good; [`retention`] deletes old runs.
//!
//! Start one with [`start`] and an [`AdminConfig`]; `chime admin` is a thin wrapper around it.

#![recursion_limit = "512"]
pub mod address_policy;
pub mod alarm;
pub mod api;
mod audit_diff;
pub mod business_days;
pub mod calendar;
mod center;
pub mod config;
pub mod dispatch;
mod error_text;
pub mod follow_up;
pub mod http;
pub mod link;
pub mod metrics;
pub mod model;
pub mod monitor;
pub mod password;
pub mod pipeline;
mod rate_limit;
pub mod registry;
pub mod results;
pub mod retention;
mod run;
pub mod schedule;
mod setting_text;
pub mod silence;
pub mod sso;
mod start;
pub mod store;
pub mod token;
pub mod workflow;

pub use center::{Admin, OpError};
pub use config::AdminConfig;
pub use start::{start, AdminHandle, StartError};
