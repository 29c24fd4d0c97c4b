//! A digest: the alarms due at once to one channel, told in one message. When many runs fail
//! together — an executor's host went down, a database every job uses is out — a team reads
//! one message listing them instead of a flood, and chat robots, which throttle a webhook to a
//! few messages a minute, do not refuse the rest. The outbox sends one when
//! `--alarm-digest-at` or more deliveries to a channel are due at once; each delivery then
//! records the digest's outcome as its own.

use super::message::{summary_variables, AlarmText};
use crate::api::alarm_policy::AlarmLanguage;
use serde_json::{json, Value};

/// Most alarms one digest lists: more due at once to one channel go in several digests, so a
/// message stays within what the chat robots take.
pub const MOST_PER_DIGEST: usize = 50;

/// Several alarms to one channel, in one message.
pub struct Digest {
    parts: Vec<Box<dyn AlarmText>>,
    link: Option<String>,
    lang: AlarmLanguage,
}

impl Digest {
    /// The digest of `parts`, linking to the console's runs under `public_url`, in `lang`.
    pub fn new(parts: Vec<Box<dyn AlarmText>>, public_url: Option<&str>, lang: AlarmLanguage) -> Digest {
        let link = public_url.map(|base| format!("{}/#/runs", base.trim_end_matches('/')));
        Digest { parts, link, lang }
    }
}

impl AlarmText for Digest {
    fn subject(&self) -> String {
        let n = self.parts.len();
        match self.lang {
            AlarmLanguage::En => format!("Chime alarm: {n} alarms at once"),
            AlarmLanguage::Zh => format!("Chime 告警：同时发生 {n} 条告警"),
        }
    }

    /// One line per alarm: its subject, and its own link when there is one.
    fn fields(&self) -> Vec<(String, String)> {
        self.parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let told = match part.link() {
                    Some(link) => format!("{}\n{link}", part.subject()),
                    None => part.subject(),
                };
                ((i + 1).to_string(), told)
            })
            .collect()
    }

    fn link(&self) -> Option<&str> {
        self.link.as_deref()
    }

    fn link_text(&self) -> String {
        match self.lang {
            AlarmLanguage::En => "Open the runs in Chime".to_owned(),
            AlarmLanguage::Zh => "在 Chime 中查看运行记录".to_owned(),
        }
    }

    /// The same names as a single alarm's (a template serves both): `text` and `title` tell
    /// the whole digest, `event` and `status` are `digest`, the others are empty.
    fn variables(&self) -> Vec<(&'static str, String)> {
        summary_variables(self, "digest", "")
    }

    /// `text`, `event: "digest"`, `count`, and each alarm's own JSON under `alarms`.
    fn json(&self) -> Value {
        json!({
            "text": self.text(),
            "event": "digest",
            "count": self.parts.len(),
            "alarms": self.parts.iter().map(|p| p.json()).collect::<Vec<_>>(),
            "link": self.link,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alarm::message::Alarm;

    #[test]
    fn lists_every_alarm_with_its_link() {
        let parts: Vec<Box<dyn AlarmText>> = (0..3)
            .map(|_| Box::new(Alarm::sample(Some("https://chime.example.com"))) as Box<dyn AlarmText>)
            .collect();
        let digest = Digest::new(parts, Some("https://chime.example.com/"), AlarmLanguage::En);
        assert_eq!(digest.subject(), "Chime alarm: 3 alarms at once");
        let text = digest.text();
        assert_eq!(text.matches("Chime alarm: job 0").count(), 3, "{text}");
        assert!(text.contains("https://chime.example.com/#/runs"), "{text}");
        assert_eq!(digest.json()["alarms"].as_array().map(Vec::len), Some(3));
        assert_eq!(digest.json()["event"], "digest");
        let zh = Digest::new(Vec::new(), None, AlarmLanguage::Zh);
        assert_eq!(zh.subject(), "Chime 告警：同时发生 0 条告警");
    }
}
