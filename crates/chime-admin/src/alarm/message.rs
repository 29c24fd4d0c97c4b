//! The alarm's text: the same facts for the e-mail (plain text and HTML, every value
//! HTML-escaped), the webhooks (JSON with a `text` field, which chat tools show, or a template's
//! variables) and the chat robots (Markdown, see [`super::channels`]).

use crate::model::{cut_chars, AlarmEvent, Group, Job, Run};
use serde_json::{json, Value};

/// What went wrong, collected from the run, its job and its group. The job or group may have
/// been deleted since the run; then only the ids are known.
#[derive(Debug, Clone)]
pub struct Alarm {
    /// The failed run.
    pub run: Run,
    /// Its job, if it still exists.
    pub job: Option<Job>,
    /// Its group, if it still exists.
    pub group: Option<Group>,
    /// The run in the console (`--public-url`), when the admin knows its public address.
    pub link: Option<String>,
    /// What it tells: the run failed, or it succeeded after the job's alarmed failure.
    pub event: AlarmEvent,
}

/// Longest result message an alarm carries, in characters: chat robots refuse long messages
/// (WeCom's Markdown takes 4,096 bytes), and the whole message stays in the run.
const RESULT_CHARS: usize = 1000;

/// Chime's and XXL-JOB's run messages separate lines with `<br>`; alarms show them as lines.
fn lines(msg: &str) -> String {
    msg.replace("<br>", "\n").replace("<br/>", "\n").replace("<br />", "\n")
}

/// Escapes the five characters that are special in HTML text and attributes.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

impl Alarm {
    fn description(&self) -> String {
        self.job
            .as_ref()
            .map(|j| j.description.clone())
            .unwrap_or_else(|| "(job deleted)".to_owned())
    }

    fn group_name(&self) -> String {
        match &self.group {
            Some(g) if g.title.is_empty() || g.title == g.app_name => g.app_name.clone(),
            Some(g) => format!("{} ({})", g.app_name, g.title),
            None => format!("group {}", self.run.group_id),
        }
    }

    /// The fields shown, in order: label and plain value.
    fn fields(&self) -> Vec<(&'static str, String)> {
        let r = &self.run;
        let when = |ms: i64| {
            chrono::DateTime::from_timestamp_millis(ms)
                .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string())
                .unwrap_or_default()
        };
        vec![
            ("Job", format!("{} {}", r.job_id, self.description())),
            ("Group", self.group_name()),
            ("Run", format!("{} ({})", r.id, r.trigger_type.as_str())),
            ("Scheduled", when(r.scheduled_at)),
            (
                "Started",
                if r.triggered_at > 0 {
                    when(r.triggered_at)
                } else {
                    "(not yet)".to_owned()
                },
            ),
            (
                "Executor",
                if r.executor_address.is_empty() {
                    "(none)".to_owned()
                } else {
                    r.executor_address.clone()
                },
            ),
            (
                "Trigger",
                format!(
                    "code {}\n{}",
                    r.trigger_code,
                    cut_chars(&lines(&r.trigger_msg), RESULT_CHARS)
                ),
            ),
            (
                "Handle",
                format!(
                    "code {}\n{}",
                    r.handle_code,
                    cut_chars(&lines(&r.handle_msg), RESULT_CHARS)
                ),
            ),
        ]
    }

    /// Markdown for chat robots: a title, one line per fact, and the link. Values are made
    /// plain (no Markdown of their own), so a handler message cannot forge links or headings.
    pub fn markdown(&self) -> String {
        let mut out = format!("### {}\n\n", plain_markdown(&self.subject()));
        for (label, value) in self.fields() {
            let value = plain_markdown(value.trim_end()).replace('\n', "  \n  ");
            out.push_str(&format!("- **{label}**: {value}\n"));
        }
        if let Some(link) = &self.link {
            out.push_str(&format!("\n[Open run {} in Chime]({link})\n", self.run.id));
        }
        out
    }

    /// The facts by label, for receivers that lay them out themselves (Teams' fact set).
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        self.fields()
            .into_iter()
            .map(|(label, value)| (label, value.trim_end().to_owned()))
            .collect()
    }

    /// The variables of a webhook template (`${name}`), by name.
    pub fn variables(&self) -> Vec<(&'static str, String)> {
        let r = &self.run;
        vec![
            ("job_id", r.job_id.to_string()),
            ("job", self.description()),
            ("group", self.group_name()),
            ("run_id", r.id.to_string()),
            ("handler", r.handler.clone()),
            ("param", r.param.clone()),
            (
                "status",
                serde_json::to_value(r.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            ),
            ("result", cut_chars(&lines(&r.handle_msg), RESULT_CHARS)),
            ("trigger_msg", cut_chars(&lines(&r.trigger_msg), RESULT_CHARS)),
            ("trigger_time", r.triggered_at.to_string()),
            ("scheduled_at", r.scheduled_at.to_string()),
            ("executor", r.executor_address.clone()),
            ("link", self.link.clone().unwrap_or_default()),
            ("text", self.text()),
        ]
    }

    /// The alarm of `event` for run `run_id`, with its job and group as they are now (`None`
    /// when deleted since), without a link (the outbox adds it).
    pub(crate) async fn load(
        store: &crate::store::Store,
        run_id: i64,
        event: AlarmEvent,
    ) -> crate::store::StoreResult<Alarm> {
        let run = store.run(run_id).await?;
        let job = store.job(run.job_id).await.ok();
        let group = store.group(run.group_id).await.ok();
        Ok(Alarm {
            run,
            job,
            group,
            link: None,
            event,
        })
    }

    /// An alarm for a channel's test send: a made-up failed run of a made-up job.
    pub fn sample(link_base: Option<&str>) -> Alarm {
        let now = crate::model::now_ms();
        let run = Run {
            id: 0,
            job_id: 0,
            group_id: 0,
            scheduled_at: now,
            triggered_at: now,
            trigger_type: chime_protocol::TriggerType::Manual,
            executor_address: String::new(),
            handler: "test".to_owned(),
            param: String::new(),
            shard_index: 0,
            shard_total: 1,
            retry_count: 0,
            trigger_code: 200,
            trigger_msg: String::new(),
            handled_at: now,
            handle_code: 500,
            handle_msg: "This is a test message from Chime: the channel works.".to_owned(),
            status: crate::model::RunStatus::Failed,
            lineage: String::new(),
            created_at: now,
            killed_by: None,
            retry_of: None,
            retried_by: None,
            lost_at: None,
            alarm: crate::model::AlarmState::None,
            alarm_msg: String::new(),
        };
        Alarm {
            run,
            job: None,
            group: None,
            link: link_base.map(|b| format!("{}/", b.trim_end_matches('/'))),
            event: AlarmEvent::Failed,
        }
    }

    /// The e-mail subject (one line, no HTML).
    pub fn subject(&self) -> String {
        let desc: String = self
            .description()
            .chars()
            .filter(|c| !c.is_control())
            .take(120)
            .collect();
        match self.event {
            AlarmEvent::Failed => format!(
                "Chime alarm: job {} ({desc}) failed, run {}",
                self.run.job_id, self.run.id
            ),
            AlarmEvent::Recovered => format!(
                "Chime alarm: job {} ({desc}) recovered, run {} succeeded",
                self.run.job_id, self.run.id
            ),
            AlarmEvent::Late => format!(
                "Chime alarm: job {} ({desc}) is late, run {} did not start in time",
                self.run.job_id, self.run.id
            ),
            AlarmEvent::Slow => format!(
                "Chime alarm: job {} ({desc}) is taking long, run {} still running",
                self.run.job_id, self.run.id
            ),
        }
    }

    /// Plain text: the e-mail's text part and the webhook's `text`.
    pub fn text(&self) -> String {
        let mut out = format!("{}\n", self.subject());
        for (label, value) in self.fields() {
            out.push_str(&format!("{label}: {}\n", value.trim_end()));
        }
        if let Some(link) = &self.link {
            out.push_str(&format!("Open in Chime: {link}\n"));
        }
        out
    }

    /// The e-mail's HTML part: a table whose every value is escaped, so a handler message
    /// cannot inject markup into the mail.
    pub fn html(&self) -> String {
        let mut out = format!(
            "<html><body><h3>{}</h3><table border=\"1\" cellpadding=\"4\" style=\"border-collapse:collapse\">",
            escape_html(&self.subject())
        );
        for (label, value) in self.fields() {
            let value = escape_html(value.trim_end()).replace('\n', "<br>");
            out.push_str(&format!("<tr><th align=\"left\">{label}</th><td>{value}</td></tr>"));
        }
        out.push_str("</table>");
        if let Some(link) = &self.link {
            let link = escape_html(link);
            out.push_str(&format!(
                "<p><a href=\"{link}\">Open run {} in Chime</a></p>",
                self.run.id
            ));
        }
        out.push_str("</body></html>");
        out
    }

    /// The webhook's JSON body: `text` for chat tools, and the facts as fields for programs.
    pub fn json(&self) -> Value {
        let r = &self.run;
        json!({
            "text": self.text(),
            "job_id": r.job_id,
            "job_description": self.job.as_ref().map(|j| j.description.clone()),
            "group": self.group.as_ref().map(|g| g.app_name.clone()),
            "run_id": r.id,
            "trigger_type": r.trigger_type.as_str(),
            "scheduled_at": r.scheduled_at,
            "executor_address": r.executor_address,
            "trigger_code": r.trigger_code,
            "trigger_msg": lines(&r.trigger_msg),
            "handle_code": r.handle_code,
            "handle_msg": lines(&r.handle_msg),
            "alarm_contacts": self.job.as_ref().map(|j| j.info.alarm_contacts.clone()).unwrap_or_default(),
            "link": self.link,
            "event": self.event.as_str(),
        })
    }
}

/// `text` with the characters that Markdown reads as markup escaped by a backslash.
fn plain_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup() {
        assert_eq!(
            super::escape_html("<b>\"x\" & 'y'</b>"),
            "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;"
        );
    }
}
