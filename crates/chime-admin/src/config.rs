//! The scheduling center's settings (the `chime admin` command fills them from flags,
//! `CHIME_*` variables and a TOML file).

use std::net::SocketAddr;
use std::time::Duration;

/// Everything `start` needs to know.
#[derive(Debug, Clone)]
pub struct AdminConfig {
    /// Address of the HTTP server (executor API, REST API, metrics).
    pub listen: SocketAddr,
    /// `sqlite://FILE`, `mysql://…` or `postgres://…`.
    pub db_url: String,
    /// Token of the XXL-JOB executor protocol (`XXL-JOB-ACCESS-TOKEN`), both directions.
    pub access_token: Option<String>,
    /// Bearer token of the REST API; without one the REST API refuses every call.
    pub api_token: Option<String>,
    /// Extra path prefix for the executor API, e.g. `/xxl-job-admin` (served with and without).
    pub context_path: Option<String>,
    /// Connect and read timeout of calls to executors.
    pub executor_timeout: Duration,
    /// How far ahead fires are claimed into run rows.
    pub lookahead: Duration,
    /// How often the scheduler claims.
    pub tick: Duration,
    /// A fire later than this is a misfire and handled by the job's misfire policy.
    pub misfire_threshold: Duration,
    /// CATCH_UP replays at most this many missed fires per job.
    pub catch_up_max: usize,
    /// CATCH_UP replays at most this many fires per second per job.
    pub catch_up_rate: u32,
    /// An executor without heartbeat for this long leaves its group's list.
    pub dead_timeout: Duration,
    /// How often groups and heartbeats are reloaded from the database.
    pub registry_refresh: Duration,
    /// How often running runs whose executor vanished are looked for.
    pub lost_sweep: Duration,
    /// A run of a job without executor timeout that has waited this long for its result, while
    /// its executor says the job is neither running nor queued there, is failed as lost.
    pub lost_result_after: Duration,
    /// Partition lease duration (renewed every third of it).
    pub lease_ttl: Duration,
    /// Runs being sent at once, over all executors.
    pub dispatch_concurrency: usize,
    /// Runs being sent at once to one executor address.
    pub per_executor_concurrency: usize,
    /// Most fires one claim transaction reads (jobs).
    pub claim_batch: i64,
    /// Zone of jobs created without one.
    pub default_time_zone: String,
    /// This admin's name in partition leases.
    pub node_id: String,
    /// Password of the first `admin` user; random (printed once) when unset.
    pub admin_password: Option<String>,
    /// Mark the console session cookie `Secure` (serve over https or behind a TLS proxy).
    pub cookie_secure: bool,
    /// SMTP server for alarm e-mails (`smtps://user:pass@host:465`,
    /// `smtp://user:pass@host:587?tls=required`); none = no e-mail alarms. Holds a password:
    /// log it only through [`crate::store::redact_url`].
    pub smtp_url: Option<String>,
    /// Sender address of alarm e-mails.
    pub alarm_from: String,
    /// URL that receives a JSON POST for every final failure; none = no webhook.
    pub alarm_webhook: Option<String>,
    /// Finished runs older than this many days are deleted (0 = keep forever).
    pub run_retention_days: u32,
    /// Audit log entries older than this many days are deleted (0 = keep forever).
    pub audit_retention_days: u32,
}

impl AdminConfig {
    /// Defaults for everything but the database URL.
    pub fn new(db_url: impl Into<String>) -> AdminConfig {
        AdminConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            db_url: db_url.into(),
            access_token: None,
            api_token: None,
            context_path: None,
            executor_timeout: Duration::from_secs(3),
            lookahead: Duration::from_secs(3),
            tick: Duration::from_millis(500),
            misfire_threshold: Duration::from_secs(5),
            catch_up_max: 100,
            catch_up_rate: 10,
            dead_timeout: Duration::from_secs(90),
            registry_refresh: Duration::from_secs(5),
            lost_sweep: Duration::from_secs(5),
            // XXL-JOB's lost-job monitor waits ten minutes too; a result still in an executor's
            // retry queue (Java re-sends every 30 s) arrives well within it.
            lost_result_after: Duration::from_secs(600),
            lease_ttl: Duration::from_secs(15),
            dispatch_concurrency: 1024,
            per_executor_concurrency: 256,
            claim_batch: 20_000,
            default_time_zone: crate::schedule::local_zone_name(),
            node_id: format!("{}-{}-{:08x}", hostname(), std::process::id(), rand::random::<u32>()),
            admin_password: None,
            cookie_secure: false,
            smtp_url: None,
            alarm_from: "chime@localhost".to_owned(),
            alarm_webhook: None,
            run_retention_days: 30,
            audit_retention_days: 365,
        }
    }

    /// The refusal text when the configuration is unsafe: listening beyond loopback without an
    /// executor access token would let anyone on the network register executors and receive jobs.
    pub fn safety_problem(&self) -> Option<String> {
        if !self.listen.ip().is_loopback() && self.access_token.as_deref().is_none_or(|t| t.trim().is_empty()) {
            return Some(format!(
                "refusing to listen on {} without an access token: executors and anyone else on the network could \
                 register and receive jobs. Set --access-token (or CHIME_ACCESS_TOKEN), or listen on 127.0.0.1.",
                self.listen
            ));
        }
        None
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "admin".to_owned())
}

/// Settings as a person writes them (flags, `CHIME_*` variables, TOML file): every field
/// optional, durations as text (`3s`, `500ms`, `2m`). Layers are merged with
/// [`Settings::overlay`] and turned into an [`AdminConfig`] with [`Settings::into_config`].
///
/// The TOML key of each setting is its `chime admin` flag without the dashes, words joined by
/// underscores (`--default-tz` → `default_tz`), so a flag's name is all a person has to know.
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// `host:port` to listen on.
    pub listen: Option<String>,
    /// Database URL.
    pub db: Option<String>,
    /// Executor protocol token.
    pub access_token: Option<String>,
    /// REST API bearer token.
    pub api_token: Option<String>,
    /// Executor API path prefix, e.g. `/xxl-job-admin`.
    pub context_path: Option<String>,
    /// Executor call timeout.
    pub executor_timeout: Option<String>,
    /// Claim look-ahead.
    pub lookahead: Option<String>,
    /// Claim interval.
    pub tick: Option<String>,
    /// Lateness after which a fire is a misfire.
    pub misfire_threshold: Option<String>,
    /// CATCH_UP limit per job.
    pub catch_up_max: Option<usize>,
    /// CATCH_UP replays per second per job.
    pub catch_up_rate: Option<u32>,
    /// Executor dead timeout.
    pub dead_timeout: Option<String>,
    /// Registry reload interval.
    pub registry_refresh: Option<String>,
    /// Lost-run sweep interval.
    pub lost_sweep: Option<String>,
    /// Wait for the result of a run without executor timeout before asking its executor.
    pub lost_result_after: Option<String>,
    /// Partition lease time.
    pub lease_ttl: Option<String>,
    /// Global dispatch concurrency.
    pub dispatch_concurrency: Option<usize>,
    /// Per-executor dispatch concurrency.
    pub per_executor_concurrency: Option<usize>,
    /// Default zone of new jobs (`--default-tz`; `default_time_zone` is read too, the key
    /// older files used).
    #[serde(alias = "default_time_zone")]
    pub default_tz: Option<String>,
    /// Node id in partition leases.
    pub node_id: Option<String>,
    /// SMTP server URL for alarm e-mails.
    pub smtp_url: Option<String>,
    /// Sender of alarm e-mails.
    pub alarm_from: Option<String>,
    /// Webhook URL for alarms.
    pub alarm_webhook: Option<String>,
    /// Days finished runs are kept (0 = forever).
    pub run_retention_days: Option<u32>,
    /// Days audit log entries are kept (0 = forever).
    pub audit_retention_days: Option<u32>,
    /// Mark the console session cookie `Secure`.
    pub cookie_secure: Option<bool>,
}

/// Parses `3s`, `500ms`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (use e.g. 3s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "sec" | "secs" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("'{text}' has an unknown unit '{unit}' (use ms, s, m or h)")),
    };
    if !(0.0..=1e9).contains(&secs) {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl Settings {
    /// Reads a TOML file's settings.
    pub fn from_toml(text: &str) -> Result<Settings, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// `self` with every field that `over` sets replaced by `over`'s value.
    pub fn overlay(self, over: Settings) -> Settings {
        macro_rules! pick {
            ($($f:ident),*) => { Settings { $($f: over.$f.or(self.$f)),* } };
        }
        pick!(
            listen,
            db,
            access_token,
            api_token,
            context_path,
            executor_timeout,
            lookahead,
            tick,
            misfire_threshold,
            catch_up_max,
            catch_up_rate,
            dead_timeout,
            registry_refresh,
            lost_sweep,
            lost_result_after,
            lease_ttl,
            dispatch_concurrency,
            per_executor_concurrency,
            default_tz,
            node_id,
            smtp_url,
            alarm_from,
            alarm_webhook,
            run_retention_days,
            audit_retention_days,
            cookie_secure
        )
    }

    /// The configuration, with defaults for what is not set. Errors name the setting.
    pub fn into_config(self) -> Result<AdminConfig, String> {
        let mut c = AdminConfig::new(self.db.unwrap_or_else(|| "sqlite://chime.db".to_owned()));
        if let Some(l) = self.listen {
            c.listen = l
                .parse()
                .map_err(|_| format!("listen: '{l}' is not host:port (e.g. 127.0.0.1:8080)"))?;
        }
        c.access_token = self.access_token.filter(|t| !t.is_empty());
        c.api_token = self.api_token.filter(|t| !t.is_empty());
        c.context_path = self
            .context_path
            .filter(|p| !p.is_empty() && p != "/")
            .map(|p| p.trim_end_matches('/').to_owned());
        let dur = |name: &str, v: Option<String>, d: Duration| -> Result<Duration, String> {
            match v {
                None => Ok(d),
                Some(s) => parse_duration(&s).map_err(|e| format!("{name}: {e}")),
            }
        };
        c.executor_timeout = dur("executor_timeout", self.executor_timeout, c.executor_timeout)?;
        c.lookahead = dur("lookahead", self.lookahead, c.lookahead)?;
        c.tick = dur("tick", self.tick, c.tick)?;
        c.misfire_threshold = dur("misfire_threshold", self.misfire_threshold, c.misfire_threshold)?;
        c.dead_timeout = dur("dead_timeout", self.dead_timeout, c.dead_timeout)?;
        c.registry_refresh = dur("registry_refresh", self.registry_refresh, c.registry_refresh)?;
        c.lost_sweep = dur("lost_sweep", self.lost_sweep, c.lost_sweep)?;
        c.lost_result_after = dur("lost_result_after", self.lost_result_after, c.lost_result_after)?;
        c.lease_ttl = dur("lease_ttl", self.lease_ttl, c.lease_ttl)?;
        if c.tick.is_zero()
            || c.lease_ttl < Duration::from_secs(1)
            || c.registry_refresh.is_zero()
            || c.lost_sweep.is_zero()
        {
            return Err("tick, registry_refresh and lost_sweep must be positive, lease_ttl at least 1s".to_owned());
        }
        if c.lookahead < c.tick {
            return Err("lookahead must be at least one tick".to_owned());
        }
        c.catch_up_max = self.catch_up_max.unwrap_or(c.catch_up_max);
        c.catch_up_rate = self.catch_up_rate.unwrap_or(c.catch_up_rate).max(1);
        c.dispatch_concurrency = self.dispatch_concurrency.unwrap_or(c.dispatch_concurrency).max(1);
        c.per_executor_concurrency = self
            .per_executor_concurrency
            .unwrap_or(c.per_executor_concurrency)
            .max(1);
        if let Some(z) = self.default_tz {
            if z.parse::<chrono_tz::Tz>().is_err() {
                return Err(format!("default_tz: unknown time zone '{z}'"));
            }
            c.default_time_zone = z;
        }
        if let Some(n) = self.node_id.filter(|n| !n.is_empty()) {
            c.node_id = n;
        }
        if let Some(url) = self.smtp_url.filter(|u| !u.is_empty()) {
            crate::alarm::check_smtp_url(&url).map_err(|e| format!("smtp_url: {e}"))?;
            c.smtp_url = Some(url);
        }
        if let Some(from) = self.alarm_from.filter(|f| !f.is_empty()) {
            crate::alarm::check_mailbox(&from).map_err(|e| format!("alarm_from: {e}"))?;
            c.alarm_from = from;
        }
        if let Some(url) = self.alarm_webhook.filter(|u| !u.is_empty()) {
            crate::alarm::check_webhook_url(&url).map_err(|e| format!("alarm_webhook: {e}"))?;
            c.alarm_webhook = Some(url);
        }
        c.run_retention_days = self.run_retention_days.unwrap_or(c.run_retention_days);
        c.audit_retention_days = self.audit_retention_days.unwrap_or(c.audit_retention_days);
        c.cookie_secure = self.cookie_secure.unwrap_or(c.cookie_secure);
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3s").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("7").unwrap(), Duration::from_secs(7));
        assert!(parse_duration("3 parsecs").is_err());
    }

    #[test]
    fn layers_and_file() {
        let file =
            Settings::from_toml("listen = \"0.0.0.0:9000\"\naccess_token = \"t\"\ndead_timeout = \"10s\"\n").unwrap();
        let flags = Settings {
            listen: Some("127.0.0.1:9001".into()),
            ..Default::default()
        };
        let c = file.overlay(flags).into_config().unwrap();
        assert_eq!(c.listen.port(), 9001);
        assert_eq!(c.access_token.as_deref(), Some("t"));
        assert_eq!(c.dead_timeout, Duration::from_secs(10));
        assert!(Settings::from_toml("bogus = 1").is_err());
        let bad = Settings {
            listen: Some("nope".into()),
            ..Default::default()
        };
        assert!(bad.into_config().unwrap_err().starts_with("listen"));
    }

    #[test]
    fn alarm_and_retention_settings() {
        let file = Settings::from_toml(
            "smtp_url = \"smtps://u:secret@mail.example.com:465\"\nalarm_from = \"Chime <c@example.com>\"\n\
             alarm_webhook = \"https://chat.example.com/hook\"\nrun_retention_days = 7\n",
        )
        .unwrap();
        let c = file.into_config().unwrap();
        assert_eq!(c.smtp_url.as_deref(), Some("smtps://u:secret@mail.example.com:465"));
        assert_eq!(c.alarm_from, "Chime <c@example.com>");
        assert_eq!(c.run_retention_days, 7);
        assert_eq!(AdminConfig::new("sqlite::memory:").run_retention_days, 30);
        let plain = Settings {
            smtp_url: Some("smtp://u:secret@mail.example.com:587".into()),
            ..Default::default()
        };
        let e = plain.into_config().unwrap_err();
        assert!(e.starts_with("smtp_url") && !e.contains("secret"), "{e}");
        let bad_hook = Settings {
            alarm_webhook: Some("mailto:x@example.com".into()),
            ..Default::default()
        };
        assert!(bad_hook.into_config().unwrap_err().starts_with("alarm_webhook"));
    }

    #[test]
    fn zone_and_cookie_keys_are_the_flag_names() {
        let c = Settings::from_toml("default_tz = \"Asia/Tokyo\"\ncookie_secure = true\n")
            .unwrap()
            .into_config()
            .unwrap();
        assert_eq!((c.default_time_zone.as_str(), c.cookie_secure), ("Asia/Tokyo", true));
        let old_key = Settings::from_toml("default_time_zone = \"Europe/Paris\"").unwrap();
        assert_eq!(old_key.into_config().unwrap().default_time_zone, "Europe/Paris");
        let bad = Settings::from_toml("default_tz = \"Mars/Base\"").unwrap();
        assert!(bad.into_config().unwrap_err().starts_with("default_tz"));
    }

    #[test]
    fn refuses_open_listen_without_token() {
        let mut c = AdminConfig::new("sqlite::memory:");
        c.listen = "0.0.0.0:8080".parse().unwrap();
        assert!(c.safety_problem().unwrap().contains("access token"));
        c.access_token = Some("x".into());
        assert!(c.safety_problem().is_none());
    }

    /// XXL-JOB-style heartbeats come every 30 s; a run on an executor that stopped must be
    /// failed within three of them (the dead timeout) plus a short sweep period.
    #[test]
    fn lost_runs_are_found_within_three_heartbeats() {
        let c = AdminConfig::new("sqlite::memory:");
        assert!(c.dead_timeout <= Duration::from_secs(90));
        assert!(c.dead_timeout + c.lost_sweep <= Duration::from_secs(95), "{c:?}");
        // The sweep skips younger runs; an executor that took a run right after its heartbeat
        // and died is gone a dead timeout minus one heartbeat period after the trigger, so the
        // sweep must look by then.
        let beat = Duration::from_secs(chime_protocol::messages::BEAT_TIMEOUT_SECS);
        let min_age = crate::monitor::sweep_min_age(c.dead_timeout, c.lost_result_after);
        assert!(min_age <= c.dead_timeout - beat, "{min_age:?}");
    }
}
