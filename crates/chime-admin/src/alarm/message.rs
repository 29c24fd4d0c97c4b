//! The alarm's text: the same facts for the e-mail (plain text and HTML, every value
//! HTML-escaped), the webhooks (JSON with a `text` field, which chat tools show, or a template's
//! variables) and the chat robots (Markdown, see [`super::channels`]).

use crate::api::alarm_events::AlarmEventEntry;
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

/// What an alarm says, whatever raised it: a run ([`Alarm`]) or another event
/// ([`EventAlarm`]). Every rendering — plain text, HTML, Markdown, a receiver's
/// card — is made from these, so all alarms look alike on every channel.
pub trait AlarmText: Send + Sync {
    /// The e-mail subject (one line, no HTML).
    fn subject(&self) -> String;
    /// The lines shown, in order: label and plain value.
    fn fields(&self) -> Vec<(String, String)>;
    /// The subject's page in the console (`--public-url`), when the admin knows its address.
    fn link(&self) -> Option<&str>;
    /// What the link opens, for its text (`run 7`, `workflow instance 12`).
    fn link_target(&self) -> String;
    /// The variables of a webhook template (`${name}`), by name.
    fn variables(&self) -> Vec<(&'static str, String)>;
    /// The webhook's JSON body: `text` for chat tools, and the facts as fields for programs.
    fn json(&self) -> Value;
    /// The job's e-mail contacts (`alarm_contacts`), for a delivery to them; none by default.
    fn contacts(&self) -> &str {
        ""
    }

    /// Markdown for chat robots: a title, one line per fact, and the link. Values are made
    /// plain (no Markdown of their own), so a handler message cannot forge links or headings.
    fn markdown(&self) -> String {
        let mut out = format!("### {}\n\n", plain_markdown(&self.subject()));
        for (label, value) in self.fields() {
            let value = plain_markdown(value.trim_end()).replace('\n', "  \n  ");
            out.push_str(&format!("- **{label}**: {value}\n"));
        }
        if let Some(link) = self.link() {
            out.push_str(&format!("\n[Open {} in Chime]({link})\n", self.link_target()));
        }
        out
    }

    /// The facts by label, for receivers that lay them out themselves (Teams' fact set).
    fn facts(&self) -> Vec<(String, String)> {
        self.fields()
            .into_iter()
            .map(|(label, value)| (label, value.trim_end().to_owned()))
            .collect()
    }

    /// Plain text: the e-mail's text part and the webhook's `text`.
    fn text(&self) -> String {
        let mut out = format!("{}\n", self.subject());
        for (label, value) in self.fields() {
            out.push_str(&format!("{label}: {}\n", value.trim_end()));
        }
        if let Some(link) = self.link() {
            out.push_str(&format!("Open in Chime: {link}\n"));
        }
        out
    }

    /// The e-mail's HTML part: a table whose every value is escaped, so a handler message
    /// cannot inject markup into the mail.
    fn html(&self) -> String {
        let mut out = format!(
            "<html><body><h3>{}</h3><table border=\"1\" cellpadding=\"4\" style=\"border-collapse:collapse\">",
            escape_html(&self.subject())
        );
        for (label, value) in self.fields() {
            let value = escape_html(value.trim_end()).replace('\n', "<br>");
            out.push_str(&format!(
                "<tr><th align=\"left\">{}</th><td>{value}</td></tr>",
                escape_html(&label)
            ));
        }
        out.push_str("</table>");
        if let Some(link) = self.link() {
            let link = escape_html(link);
            out.push_str(&format!(
                "<p><a href=\"{link}\">Open {} in Chime</a></p>",
                escape_html(&self.link_target())
            ));
        }
        out.push_str("</body></html>");
        out
    }
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
}

impl AlarmText for Alarm {
    /// The e-mail subject (one line, no HTML).
    fn subject(&self) -> String {
        let desc: String = self
            .description()
            .chars()
            .filter(|c| !c.is_control())
            .take(120)
            .collect();
        match self.event {
            // A run raises only the four below; the others are `EventAlarm`'s.
            AlarmEvent::Failed | AlarmEvent::WorkflowFailed | AlarmEvent::NoExecutor | AlarmEvent::ExecutorBack => {
                format!(
                    "Chime alarm: job {} ({desc}) failed, run {}",
                    self.run.job_id, self.run.id
                )
            }
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

    /// The fields shown, in order: label and plain value.
    fn fields(&self) -> Vec<(String, String)> {
        let r = &self.run;
        let when = |ms: i64| {
            chrono::DateTime::from_timestamp_millis(ms)
                .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string())
                .unwrap_or_default()
        };
        let fields = vec![
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
        ];
        fields
            .into_iter()
            .map(|(label, value)| (label.to_owned(), value))
            .collect()
    }

    fn link(&self) -> Option<&str> {
        self.link.as_deref()
    }

    fn link_target(&self) -> String {
        format!("run {}", self.run.id)
    }

    /// The variables of a webhook template (`${name}`), by name.
    fn variables(&self) -> Vec<(&'static str, String)> {
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
            ("event", self.event.as_str().to_owned()),
            ("title", self.subject()),
        ]
    }

    /// The webhook's JSON body: `text` for chat tools, and the facts as fields for programs.
    fn json(&self) -> Value {
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
    fn contacts(&self) -> &str {
        self.job.as_ref().map_or("", |j| j.info.alarm_contacts.as_str())
    }
}

/// An alarm no run raised, as stored (`alarm_event`): its title and lines were written when it
/// was raised, so it says what was true then.
#[derive(Debug, Clone)]
pub struct EventAlarm {
    /// The stored alarm (its deliveries are not needed here).
    pub entry: AlarmEventEntry,
    /// Its subject's page in the console, under `--public-url`.
    pub link: Option<String>,
}

impl EventAlarm {
    /// `entry` with its link under `public_url`, when the admin knows its address.
    pub fn new(entry: AlarmEventEntry, public_url: Option<&str>) -> EventAlarm {
        let link = public_url
            .filter(|_| !entry.link.is_empty())
            .map(|base| format!("{}/{}", base.trim_end_matches('/'), entry.link));
        EventAlarm { entry, link }
    }

    /// The value of the line labelled `label`, or empty.
    fn fact(&self, label: &str) -> String {
        self.entry
            .facts
            .iter()
            .find(|f| f.label == label)
            .map(|f| f.value.clone())
            .unwrap_or_default()
    }
}

impl AlarmText for EventAlarm {
    fn subject(&self) -> String {
        self.entry.title.chars().filter(|c| !c.is_control()).collect()
    }

    fn fields(&self) -> Vec<(String, String)> {
        self.entry
            .facts
            .iter()
            .map(|f| (f.label.clone(), f.value.clone()))
            .collect()
    }

    fn link(&self) -> Option<&str> {
        self.link.as_deref()
    }

    fn link_target(&self) -> String {
        match self.entry.event {
            AlarmEvent::WorkflowFailed => format!("workflow instance {}", self.entry.subject),
            _ => "the group's executors".to_owned(),
        }
    }

    /// The same names as a run's alarm (a template serves both): those about a job or a run
    /// are empty, `status` is the event.
    fn variables(&self) -> Vec<(&'static str, String)> {
        crate::api::alarm_channels::TEMPLATE_VARIABLES
            .iter()
            .map(|name| {
                let value = match *name {
                    "group" => self.fact("Group"),
                    "status" | "event" => self.entry.event.as_str().to_owned(),
                    "link" => self.link.clone().unwrap_or_default(),
                    "text" => self.text(),
                    "title" => self.subject(),
                    _ => String::new(),
                };
                (*name, value)
            })
            .collect()
    }

    fn json(&self) -> Value {
        let facts: serde_json::Map<String, Value> = self
            .entry
            .facts
            .iter()
            .map(|f| (f.label.clone(), Value::String(f.value.clone())))
            .collect();
        json!({
            "text": self.text(),
            "event": self.entry.event.as_str(),
            "alarm_event_id": self.entry.id,
            "subject_id": self.entry.subject,
            "title": self.entry.title,
            "facts": facts,
            "link": self.link,
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
