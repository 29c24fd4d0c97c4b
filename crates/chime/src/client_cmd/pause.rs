//! When a pause given on the command line ends: `--until TIME` or `--for DURATION`, for
//! `chime job|group|workflow pause`; and instants given on the command line.

use super::Failure;
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The end of a pause: one of the two flags.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub(super) struct PauseEnd {
    /// Until this time: RFC 3339 (`2026-12-24T08:00:00+08:00`) or epoch milliseconds.
    #[arg(long)]
    until: Option<String>,
    /// For this long from now (`90s`, `30m`, `2h`, `1d`).
    #[arg(long = "for", value_parser = humantime::parse_duration)]
    r#for: Option<Duration>,
}

impl PauseEnd {
    /// The body of the pause request: `{"until": epoch ms}`.
    pub(super) fn body(&self) -> Result<Value, Failure> {
        Ok(json!({ "until": self.epoch_ms()? }))
    }

    fn epoch_ms(&self) -> Result<i64, Failure> {
        if let Some(d) = self.r#for {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            return i64::try_from((now + d).as_millis()).map_err(|_| Failure("--for is too long".into()));
        }
        instant("--until", self.until.as_deref().unwrap_or_default())
    }
}

/// The instant `text` given to `flag` names: RFC 3339 (`2026-12-24T08:00:00+08:00`) or epoch
/// milliseconds, as epoch ms.
pub(super) fn instant(flag: &str, text: &str) -> Result<i64, Failure> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .map_err(|e| {
            Failure(format!(
                "{flag} {text:?}: {e} (give RFC 3339, such as 2026-12-24T08:00:00+08:00, or epoch milliseconds)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_takes_rfc3339_or_epoch_ms_and_for_counts_from_now() {
        let until = |t: &str| {
            PauseEnd {
                until: Some(t.into()),
                r#for: None,
            }
            .epoch_ms()
        };
        assert_eq!(until("2026-12-24T08:00:00+08:00").unwrap(), 1_798_070_400_000);
        assert_eq!(until("1798070400000").unwrap(), 1_798_070_400_000);
        assert!(until("next tuesday").unwrap_err().0.contains("RFC 3339"));
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        let end = PauseEnd {
            until: None,
            r#for: Some(Duration::from_secs(7200)),
        }
        .epoch_ms()
        .unwrap();
        assert!((before + 7_200_000..before + 7_260_000).contains(&end), "{end}");
    }
}
