//! A run's log as the API reads it (the executor's, or the admin's stored copy), and the log a
//! Chime executor sends to be kept.

use super::{Admin, OpError};
use crate::dispatch::client::Target;
use crate::model::Group;
use crate::store::StoredLog;
use chime_protocol::{LogParam, LogResult, RunLogParam, MAX_RUN_LOG_BYTES};

impl Admin {
    /// Reads a run's log from line `from_line` on: the admin's stored copy once the run is
    /// final and its executor sent its whole log ([`Admin::store_run_log`]), else its
    /// executor's (as XXL-JOB reads it), else — the executor cannot be reached or no longer has
    /// it — whatever is stored (a cut copy too). The log counts as complete once the run has a
    /// result (Java executors always say `isEnd: false`).
    pub async fn run_log(&self, run_id: i64, from_line: i32) -> Result<LogPage, OpError> {
        let run = self.store.run(run_id).await?;
        let finished = run.handle_code != 0;
        // Read for a final run only: an open run is polled about once a second while its log
        // grows, and its copy (if one came before its result) is needed only as the fallback.
        let stored = if finished {
            self.store.stored_run_log(run_id).await?
        } else {
            None
        };
        // A cut copy holds only the log's end, numbered from its own first line: while the
        // executor still has the whole log, its numbering (which a reader polling the run
        // already follows) and its complete text are better.
        if let Some(log) = stored.as_ref().filter(|l| !l.truncated) {
            return Ok(LogPage::stored(log, from_line, true));
        }
        if run.executor_address.is_empty() {
            return Err(OpError::Conflict(format!(
                "run {run_id} was not sent to any executor, so it has no log"
            )));
        }
        let group = self.store.group(run.group_id).await?;
        let param = LogParam {
            log_date_tim: run.triggered_at,
            log_id: run.id,
            from_line_num: from_line.max(1),
        };
        let reply = self.client.log(Target::of(&group, &run.executor_address), &param).await;
        if !reply.is_success() {
            let stored = match stored {
                None if !finished => self.store.stored_run_log(run_id).await?,
                read => read,
            };
            return match &stored {
                Some(log) => Ok(LogPage::stored(log, from_line, finished)),
                None => Err(OpError::Executor(
                    reply.msg.unwrap_or_else(|| format!("code {}", reply.code)),
                )),
            };
        }
        let mut result = reply.content.unwrap_or(LogResult {
            from_line_num: from_line,
            to_line_num: from_line - 1,
            log_content: String::new(),
            is_end: false,
        });
        result.is_end = finished;
        Ok(LogPage {
            page: result,
            stored: false,
        })
    }

    /// Keeps the log a Chime executor sent for run `param.log_id` (`POST /api/runLog`), cut to
    /// its last [`MAX_RUN_LOG_BYTES`]. The run must exist, have been sent to an executor, and
    /// belong to the group of `param.app_name` — the app name the caller registers under,
    /// whose access token `token_allows` checks. Returns whether it was stored: false when the
    /// run's group does not keep logs.
    pub async fn store_run_log(
        &self,
        param: &RunLogParam,
        token_allows: impl FnOnce(&Group) -> bool,
    ) -> Result<bool, OpError> {
        let run_id = param.log_id;
        let Some(target) = self.store.run_log_target(run_id).await? else {
            return Err(crate::model::Invalid::new("logId", format!("run {run_id} does not exist")).into());
        };
        let group = self.store.group(target.group_id).await?;
        if group.app_name != param.app_name.trim() || !token_allows(&group) {
            return Err(OpError::Forbidden(format!(
                "run {run_id} does not belong to the group of app name '{}'",
                param.app_name.chars().take(64).collect::<String>()
            )));
        }
        if !target.keep_logs {
            return Ok(false);
        }
        // The sender's cap may be larger than the admin's: the admin keeps the end, as the
        // executor would have cut it.
        let cut = (param.log_content.len() > MAX_RUN_LOG_BYTES).then(|| {
            RunLogParam::from_log(
                &param.app_name,
                run_id,
                param.log_date_tim,
                param.log_content.as_bytes(),
                MAX_RUN_LOG_BYTES,
            )
        });
        let content = cut
            .as_ref()
            .map_or(param.log_content.as_str(), |c| c.log_content.as_str());
        let total = param.total_bytes.max(param.log_content.len() as u64);
        let truncated = param.truncated || cut.is_some();
        let total = i64::try_from(total).unwrap_or(i64::MAX);
        Ok(self.store.put_run_log(run_id, content, truncated, total).await?)
    }
}

/// A page of a run's log, and where it was read.
#[derive(Debug, Clone)]
pub struct LogPage {
    /// The lines from the asked line on.
    pub page: LogResult,
    /// Read from the admin's stored copy (true) or from the executor.
    pub stored: bool,
}

impl LogPage {
    /// The page of a stored log from line `from_line`; a log whose start was cut begins with a
    /// line saying so.
    fn stored(log: &StoredLog, from_line: i32, finished: bool) -> LogPage {
        let from = from_line.max(1);
        let note = log.truncated.then(|| {
            format!(
                "[chime] log cut: the first {} of {} bytes were not kept; the last {} follow",
                (log.total_bytes as u64).saturating_sub(log.content.len() as u64),
                log.total_bytes,
                log.content.len()
            )
        });
        let mut content = String::new();
        let mut line_no: i32 = 0;
        for line in note.iter().map(String::as_str).chain(log.content.lines()) {
            line_no = line_no.saturating_add(1);
            if line_no >= from {
                content.push_str(line);
                content.push('\n');
            }
        }
        LogPage {
            page: LogResult {
                from_line_num: from,
                to_line_num: line_no,
                log_content: content,
                is_end: finished,
            },
            stored: true,
        }
    }
}
