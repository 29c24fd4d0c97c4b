//! The alarm's text: the same facts for the e-mail (plain text and HTML, every value
//! HTML-escaped), the webhooks (JSON with a `text` field, which chat tools show, or a template's
//! variables) and the chat robots (Markdown, see [`super::channels`]).

use crate::api::alarm_events::AlarmEventEntry;
use crate::api::alarm_policy::AlarmLanguage;
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
    /// The language it is written in: the job's `alarm_language`, else the admin's.
    pub lang: AlarmLanguage,
    /// The last lines of the run's log, when they could be read (see [`log_tail`]); empty
    /// otherwise.
    pub log_tail: String,
}

/// Most lines of the run's log an alarm carries.
const LOG_TAIL_LINES: usize = 20;
/// Most characters of the run's log an alarm carries (the end is kept).
const LOG_TAIL_CHARS: usize = 1500;

/// The end of `log`: its last [`LOG_TAIL_LINES`] lines, at most [`LOG_TAIL_CHARS`] characters,
/// `<br>` read as line breaks (XXL-JOB executors' logs use them), trailing blank lines dropped.
pub fn log_tail(log: &str) -> String {
    let text = lines(log);
    let all: Vec<&str> = text.trim_end().lines().collect();
    let tail = all[all.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
    let count = tail.chars().count();
    if count <= LOG_TAIL_CHARS {
        return tail;
    }
    let kept: String = tail.chars().skip(count - LOG_TAIL_CHARS).collect();
    format!("…{kept}")
}

/// Declares [`Words`], one field per word of an alarm message, and its English and Chinese
/// tables, from one list that keeps each word beside its translation.
macro_rules! words {
    ($( $(#[doc = $doc:literal])* $field:ident: $en:literal, $zh:literal; )*) => {
        /// The words of an alarm message in one language. The values (job descriptions,
        /// results, addresses) are shown as they are.
        struct Words {
            $( $(#[doc = $doc])* $field: &'static str, )*
        }

        const ENGLISH: Words = Words { $( $field: $en, )* };
        const CHINESE: Words = Words { $( $field: $zh, )* };
    };
}

words! {
    title: "Chime alarm", "Chime 告警";
    job: "Job", "任务";
    group: "Group", "执行器";
    run: "Run", "运行";
    scheduled: "Scheduled", "计划时间";
    started: "Started", "开始时间";
    executor: "Executor", "执行器地址";
    trigger: "Trigger", "调度结果";
    handle: "Handle", "执行结果";
    not_yet: "(not yet)", "（尚未开始）";
    nobody: "(none)", "（无）";
    job_deleted: "(job deleted)", "（任务已删除）";
    code: "code", "代码";
    log: "Log (last lines)", "日志（末尾）";
    /// The link's text around what it opens (`Open run 7 in Chime`).
    open_before: "Open ", "在 Chime 中查看";
    open_after: " in Chime", "";
    /// What the job did, then what its run did, by event.
    failed_job: "failed", "执行失败";
    failed_run: "", "";
    recovered_job: "recovered", "已恢复";
    recovered_run: " succeeded", " 执行成功";
    late_job: "is late", "延迟";
    late_run: " did not start in time", " 未按时开始";
    slow_job: "is taking long", "运行过久";
    slow_run: " still running", " 仍在运行";
}

impl AlarmLanguage {
    fn words(self) -> &'static Words {
        match self {
            AlarmLanguage::En => &ENGLISH,
            AlarmLanguage::Zh => &CHINESE,
        }
    }
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
    /// The link's text (`Open run 7 in Chime`).
    fn link_text(&self) -> String;
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
            out.push_str(&format!("\n[{}]({link})\n", plain_markdown(&self.link_text())));
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
            out.push_str(&format!("{}: {link}\n", self.link_text()));
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
                "<p><a href=\"{link}\">{}</a></p>",
                escape_html(&self.link_text())
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
            .unwrap_or_else(|| self.lang.words().job_deleted.to_owned())
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
            lang: AlarmLanguage::default(),
            log_tail: String::new(),
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
            lang: AlarmLanguage::default(),
            log_tail: String::new(),
        }
    }

    /// The language the job asks its alarms in, if it names one.
    pub fn job_language(&self) -> Option<AlarmLanguage> {
        let job = self.job.as_ref()?;
        AlarmLanguage::parse(&job.info.alarm_language).ok().flatten()
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
        let w = self.lang.words();
        let (job_is, run_is) = match self.event {
            // A run raises only these; the others are `EventAlarm`'s.
            AlarmEvent::Failed | AlarmEvent::WorkflowFailed | AlarmEvent::NoExecutor | AlarmEvent::ExecutorBack => {
                (w.failed_job, w.failed_run)
            }
            AlarmEvent::Recovered => (w.recovered_job, w.recovered_run),
            AlarmEvent::Late => (w.late_job, w.late_run),
            AlarmEvent::Slow => (w.slow_job, w.slow_run),
        };
        let (job, run) = (w.job, w.run);
        match self.lang {
            AlarmLanguage::En => format!(
                "{}: {} {} ({desc}) {job_is}, {} {}{run_is}",
                w.title,
                job.to_lowercase(),
                self.run.job_id,
                run.to_lowercase(),
                self.run.id
            ),
            AlarmLanguage::Zh => format!(
                "{}：{job} {}（{desc}）{job_is}，{run} {}{run_is}",
                w.title, self.run.job_id, self.run.id
            ),
        }
    }

    /// The fields shown, in order: label and plain value.
    fn fields(&self) -> Vec<(String, String)> {
        let r = &self.run;
        let w = self.lang.words();
        let when = |ms: i64| {
            chrono::DateTime::from_timestamp_millis(ms)
                .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string())
                .unwrap_or_default()
        };
        let started = if r.triggered_at > 0 {
            when(r.triggered_at)
        } else {
            w.not_yet.to_owned()
        };
        let executor = if r.executor_address.is_empty() {
            w.nobody.to_owned()
        } else {
            r.executor_address.clone()
        };
        let mut fields = vec![
            (w.job, format!("{} {}", r.job_id, self.description())),
            (w.group, self.group_name()),
            (w.run, format!("{} ({})", r.id, r.trigger_type.as_str())),
            (w.scheduled, when(r.scheduled_at)),
            (w.started, started),
            (w.executor, executor),
            (w.trigger, result_of(w, r.trigger_code, &r.trigger_msg)),
            (w.handle, result_of(w, r.handle_code, &r.handle_msg)),
        ];
        if !self.log_tail.is_empty() {
            fields.push((w.log, self.log_tail.clone()));
        }
        fields
            .into_iter()
            .map(|(label, value)| (label.to_owned(), value))
            .collect()
    }

    fn link(&self) -> Option<&str> {
        self.link.as_deref()
    }

    fn link_text(&self) -> String {
        let w = self.lang.words();
        let run = match self.lang {
            AlarmLanguage::En => w.run.to_lowercase(),
            AlarmLanguage::Zh => w.run.to_owned(),
        };
        format!("{}{run} {}{}", w.open_before, self.run.id, w.open_after)
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
            ("log_tail", self.log_tail.clone()),
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
            "log_tail": self.log_tail,
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

    fn link_text(&self) -> String {
        match self.entry.event {
            AlarmEvent::WorkflowFailed => format!("Open workflow instance {} in Chime", self.entry.subject),
            _ => "Open the group's executors in Chime".to_owned(),
        }
    }

    /// The same names as a run's alarm (a template serves both): those about a job or a run
    /// are empty, `status` is the event.
    fn variables(&self) -> Vec<(&'static str, String)> {
        summary_variables(self, self.entry.event.as_str(), &self.fact("Group"))
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

/// The template variables of an alarm about no one run (a stored event, a digest): the same
/// names as a run's alarm (a template serves both), with `text`, `title`, `link`, `event` and
/// `status` (both the event) and `group` (empty when none) set, the others empty.
pub(super) fn summary_variables(alarm: &dyn AlarmText, event: &str, group: &str) -> Vec<(&'static str, String)> {
    crate::api::alarm_channels::TEMPLATE_VARIABLES
        .iter()
        .map(|name| {
            let value = match *name {
                "group" => group.to_owned(),
                "status" | "event" => event.to_owned(),
                "link" => alarm.link().unwrap_or_default().to_owned(),
                "text" => alarm.text(),
                "title" => alarm.subject(),
                _ => String::new(),
            };
            (*name, value)
        })
        .collect()
}

/// A trigger or handle result: its code, then its message as lines, cut.
fn result_of(w: &Words, code: i64, msg: &str) -> String {
    format!("{} {code}\n{}", w.code, cut_chars(&lines(msg), RESULT_CHARS))
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
    fn a_log_tail_keeps_the_last_lines_and_characters() {
        let log: String = (1..=30).map(|i| format!("line {i}<br>")).collect();
        let tail = super::log_tail(&log);
        assert!(tail.starts_with("line 11\n") && tail.ends_with("line 30"), "{tail}");
        assert_eq!(tail.lines().count(), 20);
        let long = super::log_tail(&"x".repeat(5000));
        assert_eq!(long.chars().count(), 1501);
        assert!(long.starts_with('…'));
        assert_eq!(super::log_tail(""), "");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            super::escape_html("<b>\"x\" & 'y'</b>"),
            "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;"
        );
    }
}
