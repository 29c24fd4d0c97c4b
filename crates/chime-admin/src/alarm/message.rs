//! The alarm's text: the same facts for the e-mail (plain text and HTML, every value
//! HTML-escaped) and the webhook (JSON with a `text` field, which chat tools show).

use crate::model::{Group, Job, Run};
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
}

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
                "Executor",
                if r.executor_address.is_empty() {
                    "(none)".to_owned()
                } else {
                    r.executor_address.clone()
                },
            ),
            ("Trigger", format!("code {}\n{}", r.trigger_code, lines(&r.trigger_msg))),
            ("Handle", format!("code {}\n{}", r.handle_code, lines(&r.handle_msg))),
        ]
    }

    /// The e-mail subject (one line, no HTML).
    pub fn subject(&self) -> String {
        let desc: String = self
            .description()
            .chars()
            .filter(|c| !c.is_control())
            .take(120)
            .collect();
        format!(
            "Chime alarm: job {} ({desc}) failed, run {}",
            self.run.job_id, self.run.id
        )
    }

    /// Plain text: the e-mail's text part and the webhook's `text`.
    pub fn text(&self) -> String {
        let mut out = format!("{}\n", self.subject());
        for (label, value) in self.fields() {
            out.push_str(&format!("{label}: {}\n", value.trim_end()));
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
        out.push_str("</table></body></html>");
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
        })
    }
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
