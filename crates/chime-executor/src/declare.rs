//! Jobs declared in the service's code ([`JobDeclaration`], [`ExecutorBuilder::declare_job`]):
//! at start the executor applies them to a Chime admin's jobs-as-code endpoint
//! (`POST /v1/apply`) with an API key limited to its group, so the service's jobs live beside
//! its handlers. Applying is idempotent (the same declarations change nothing the second time)
//! and never deletes a job (no `prune`): a job someone made in the console stays. The outcome
//! is logged. An XXL-JOB admin has no such endpoint; declarations are for Chime's.
//!
//! [`ExecutorBuilder::declare_job`]: crate::ExecutorBuilder::declare_job

use serde::Serialize;
use std::time::Duration;

/// A job the service declares: its key in the group, the handler it runs, and its schedule and
/// strategies. What a declaration leaves out takes the admin's default: the declaration is the
/// job's whole definition, applied again at each start of the service.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobDeclaration {
    key: String,
    handler: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule_expr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    misfire_strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    route_strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    block_strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    param: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_secs: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    running: Option<bool>,
}

impl JobDeclaration {
    /// A job known as `key` in the executor's group (its stable name: `nightly-report`), run by
    /// handler `handler`, without a schedule until one is set (manual and API triggers only).
    pub fn new(key: impl Into<String>, handler: impl Into<String>) -> JobDeclaration {
        JobDeclaration {
            key: key.into(),
            handler: handler.into(),
            description: None,
            schedule_type: None,
            schedule_expr: None,
            time_zone: None,
            misfire_strategy: None,
            route_strategy: None,
            block_strategy: None,
            param: None,
            timeout_secs: None,
            retry_count: None,
            running: None,
        }
    }

    /// Fires on a Quartz cron expression (seconds first: `0 30 2 * * ?`), started.
    pub fn cron(mut self, expression: impl Into<String>) -> Self {
        self.schedule_type = Some("CRON".into());
        self.schedule_expr = Some(expression.into());
        self.running.get_or_insert(true);
        self
    }

    /// Fires every `every` (whole seconds), started.
    pub fn fixed_rate(mut self, every: Duration) -> Self {
        self.schedule_type = Some("FIX_RATE".into());
        self.schedule_expr = Some(every.as_secs().max(1).to_string());
        self.running.get_or_insert(true);
        self
    }

    /// The IANA zone of the cron expression (`Asia/Shanghai`; default: the admin's).
    pub fn time_zone(mut self, zone: impl Into<String>) -> Self {
        self.time_zone = Some(zone.into());
        self
    }

    /// What the console shows as the job's description.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// The parameter each run gets.
    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// The route strategy by its XXL-JOB name (`ROUND`, `SHARDING_BROADCAST`, …).
    pub fn route(mut self, strategy: impl Into<String>) -> Self {
        self.route_strategy = Some(strategy.into());
        self
    }

    /// The block strategy by its XXL-JOB name (`SERIAL_EXECUTION`, `DISCARD_LATER`,
    /// `COVER_EARLY`).
    pub fn block(mut self, strategy: impl Into<String>) -> Self {
        self.block_strategy = Some(strategy.into());
        self
    }

    /// The misfire strategy by its name (`DO_NOTHING`, `FIRE_ONCE_NOW`).
    pub fn misfire(mut self, strategy: impl Into<String>) -> Self {
        self.misfire_strategy = Some(strategy.into());
        self
    }

    /// A run's time limit.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout_secs = Some(limit.as_secs() as i64);
        self
    }

    /// How many times a failed run is retried.
    pub fn retries(mut self, count: u32) -> Self {
        self.retry_count = Some(i64::from(count));
        self
    }

    /// Declared, but stopped: its schedule does not fire until someone starts it.
    pub fn stopped(mut self) -> Self {
        self.running = Some(false);
        self
    }

    /// Its key.
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// The body of `POST /v1/apply` for one group's declared jobs (no `prune`).
pub(crate) fn apply_body(app_name: &str, jobs: &[JobDeclaration]) -> serde_json::Value {
    serde_json::json!({ "groups": [{ "app_name": app_name, "jobs": jobs }] })
}

/// The REST API's root of an admin base address (`http://host:8080/xxl-job-admin` →
/// `http://host:8080`): Chime serves `/v1` at the root whatever its executor API's path.
pub(crate) fn api_root(base: &str) -> Option<String> {
    let url = reqwest::Url::parse(base).ok()?;
    Some(url.origin().ascii_serialization())
}

/// How an apply went, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Applied {
    /// Written: what was created and changed (keys), how many were already as declared.
    Done {
        created: Vec<String>,
        updated: Vec<String>,
        unchanged: usize,
    },
    /// The admin refused (a 4xx): the same request would be refused again.
    Refused(String),
}

/// Applies `jobs` as `app_name`'s at the admins `bases` with API key `key`, trying each admin,
/// and again with growing pauses while none answers (an admin restarting). Ends at the first
/// answer; its outcome is logged and returned.
pub(crate) async fn apply(
    http: &reqwest::Client,
    bases: &[String],
    key: &str,
    app_name: &str,
    jobs: &[JobDeclaration],
) -> Applied {
    let body = apply_body(app_name, jobs);
    let mut pause = Duration::from_secs(1);
    loop {
        for root in bases.iter().filter_map(|b| api_root(b)) {
            let url = format!("{root}/v1/apply");
            let sent = http.post(&url).bearer_auth(key).json(&body).send().await;
            let response = match sent {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(url = %url, error = %e.without_url(), "declared jobs: admin unreachable");
                    continue;
                }
            };
            let status = response.status();
            let answer: serde_json::Value = response.json().await.unwrap_or_default();
            if status.is_success() {
                let outcome = applied(&answer, jobs.len());
                if let Applied::Done {
                    created,
                    updated,
                    unchanged,
                } = &outcome
                {
                    tracing::info!(?created, ?updated, unchanged, group = %app_name, "declared jobs applied");
                }
                return outcome;
            }
            let why = answer["error"].as_str().unwrap_or("").to_owned();
            if status.is_client_error() {
                tracing::error!(status = status.as_u16(), error = %why, group = %app_name,
                    "declared jobs refused by the admin: check the API key (an editor key of this group)");
                return Applied::Refused(format!("{status}: {why}"));
            }
            tracing::warn!(status = status.as_u16(), error = %why, "declared jobs: the admin failed; trying again");
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(30));
    }
}

/// The created and changed jobs of an apply plan, by key.
fn applied(plan: &serde_json::Value, declared: usize) -> Applied {
    let keys = |list: &str| -> Vec<String> {
        plan[list]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["kind"] == "job")
            .filter_map(|e| e["key"].as_str().map(str::to_owned))
            .collect()
    };
    let (created, updated) = (keys("create"), keys("update"));
    let unchanged = declared.saturating_sub(created.len() + updated.len());
    Applied::Done {
        created,
        updated,
        unchanged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_is_the_jobs_document_of_its_group() {
        let jobs = vec![
            JobDeclaration::new("nightly-report", "report")
                .cron("0 30 2 * * ?")
                .time_zone("Asia/Shanghai")
                .retries(2),
            JobDeclaration::new("rebuild", "rebuild").stopped(),
        ];
        assert_eq!(
            apply_body("billing", &jobs),
            serde_json::json!({"groups": [{"app_name": "billing", "jobs": [
                {"key": "nightly-report", "handler": "report", "schedule_type": "CRON", "schedule_expr": "0 30 2 * * ?",
                 "time_zone": "Asia/Shanghai", "retry_count": 2, "running": true},
                {"key": "rebuild", "handler": "rebuild", "running": false},
            ]}]})
        );
        assert_eq!(
            JobDeclaration::new("k", "h").stopped().cron("0 * * * * ?").running,
            Some(false),
            "a stopped job stays stopped whatever comes after"
        );
    }

    #[test]
    fn the_rest_api_is_at_the_admins_root() {
        assert_eq!(
            api_root("http://chime:8080/xxl-job-admin").as_deref(),
            Some("http://chime:8080")
        );
        assert_eq!(
            api_root("https://chime.example.com").as_deref(),
            Some("https://chime.example.com")
        );
        assert_eq!(api_root("not a url"), None);
    }
}
