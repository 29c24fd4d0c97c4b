//! Every change the APIs make, one method of [`Admin`](super::Admin) each, by resource. An
//! operation checks its input, writes, and wakes what the change concerns: the directory after
//! a change to groups, the claim loop for a job that is due soon, the workflow loop after a
//! change to workflows. Who may call it (the caller's groups, the admin role) is the caller's
//! check: each API knows its callers.

pub(super) mod alarm_channels;
pub(super) mod alarm_silences;
pub(super) mod api_keys;
pub(super) mod backfills;
pub(super) mod calendars;
pub(super) mod flow;
pub(super) mod groups;
pub(super) mod jobs;
pub(super) mod pauses;
pub(super) mod runs;
pub(super) mod users;
pub(super) mod workflows;
