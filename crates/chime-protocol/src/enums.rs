//! The enumerations XXL-JOB stores in its database and sends on the wire, spelled as XXL-JOB
//! spells them (`ROUND`, `SERIAL_EXECUTION`, `GLUE_SHELL`, …).
//!
//! Every enum parses from and prints to its wire string, and has the English title XXL-JOB's
//! console shows. An unknown string is an [`UnknownVariant`] error naming the enum and listing
//! the accepted values, so a user who types `ROUND_ROBIN` learns what to type instead.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A string that is not one of an enum's wire values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} '{value}' (expected one of: {expected})")]
pub struct UnknownVariant {
    /// Which enum was being parsed, e.g. "route strategy".
    pub kind: &'static str,
    /// The string that did not match.
    pub value: String,
    /// The accepted wire values, comma-separated.
    pub expected: String,
}

macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $kind:literal {
            $( $(#[$vmeta:meta])* $variant:ident => $wire:literal, $title:literal; )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant, in the order XXL-JOB's console lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire (and database) spelling.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            /// The English title shown in a console.
            pub const fn title(self) -> &'static str {
                match self { $($name::$variant => $title),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownVariant;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim() {
                    $($wire => Ok($name::$variant),)+
                    _ => Err(UnknownVariant {
                        kind: $kind,
                        value: s.to_owned(),
                        expected: [$($wire),+].join(", "),
                    }),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

wire_enum! {
    /// How a job is scheduled (`xxl_job_info.schedule_type`).
    ScheduleType, "schedule type" {
        /// Never fires by itself; only manual, API or parent triggers.
        None => "NONE", "None";
        /// Quartz cron expression.
        Cron => "CRON", "Cron";
        /// Fixed interval.
        FixRate => "FIX_RATE", "Fix rate";
        /// Chime's addition: a fixed delay after the previous run ended (its result).
        FixDelay => "FIX_DELAY", "Fix delay";
    }
}

wire_enum! {
    /// What to do with fires that were missed (scheduler down, or too late).
    MisfireStrategy, "misfire strategy" {
        /// Skip the missed fires; continue from the next one in the future.
        DoNothing => "DO_NOTHING", "Do nothing";
        /// Fire once now for all missed fires, then continue.
        FireOnceNow => "FIRE_ONCE_NOW", "Fire once now";
        /// Chime's addition: replay each missed fire (bounded and rate-limited by the admin).
        CatchUp => "CATCH_UP", "Catch up";
    }
}

wire_enum! {
    /// How the admin picks an executor address for a trigger.
    RouteStrategy, "route strategy" {
        /// The first address of the sorted list.
        First => "FIRST", "First";
        /// The last address of the sorted list.
        Last => "LAST", "Last";
        /// Round robin per job.
        Round => "ROUND", "Round";
        /// Uniformly random.
        Random => "RANDOM", "Random";
        /// Same job, same executor (XXL-JOB's MD5 ring with 100 virtual nodes).
        ConsistentHash => "CONSISTENT_HASH", "Consistent Hash";
        /// The address used least often for this job.
        LeastFrequentlyUsed => "LEAST_FREQUENTLY_USED", "Least Frequently Used";
        /// The address used longest ago for this job.
        LeastRecentlyUsed => "LEAST_RECENTLY_USED", "Least Recently Used";
        /// The first address answering `/beat`.
        Failover => "FAILOVER", "Failover";
        /// The first address answering `/idleBeat` as idle for this job.
        Busyover => "BUSYOVER", "Busyover";
        /// Every address, each with its shard index and the shard total.
        ShardingBroadcast => "SHARDING_BROADCAST", "Sharding Broadcast";
    }
}

wire_enum! {
    /// What an executor does with a trigger for a job that is already running there.
    BlockStrategy, "block strategy" {
        /// Queue it behind the running one (FIFO).
        SerialExecution => "SERIAL_EXECUTION", "Serial execution";
        /// Reject the new trigger.
        DiscardLater => "DISCARD_LATER", "Discard Later";
        /// Stop the running trigger (and the queued ones) and run the new one.
        CoverEarly => "COVER_EARLY", "Cover Early";
    }
}

impl Default for BlockStrategy {
    /// XXL-JOB treats a missing block strategy as serial execution.
    fn default() -> Self {
        BlockStrategy::SerialExecution
    }
}

wire_enum! {
    /// Why a run was started.
    TriggerType, "trigger type" {
        /// Started by a person from the console or CLI.
        Manual => "MANUAL", "Manual trigger";
        /// Started by the job's schedule.
        Cron => "CRON", "Cron trigger";
        /// Started again after a failure, while retries remain.
        Retry => "RETRY", "Fail retry trigger";
        /// Started because its parent job succeeded.
        Parent => "PARENT", "Parent job trigger";
        /// Started through the REST API.
        Api => "API", "Api trigger";
        /// Started late, by the misfire policy.
        Misfire => "MISFIRE", "Misfire compensation trigger";
        /// Started as a node of a workflow instance (Chime's addition).
        Workflow => "WORKFLOW", "Workflow node trigger";
        /// Started by a backfill, for a past fire time of the job's schedule (Chime's addition).
        Backfill => "BACKFILL", "Backfill trigger";
    }
}

wire_enum! {
    /// What kind of code a job runs: a registered handler (BEAN) or a script sent with the trigger.
    GlueType, "glue type" {
        /// A handler registered in the executor by name.
        Bean => "BEAN", "BEAN";
        /// A Groovy class compiled by a Java executor (not supported by Chime's executor).
        GlueGroovy => "GLUE_GROOVY", "GLUE(Java)";
        /// A shell script run with `bash`.
        GlueShell => "GLUE_SHELL", "GLUE(Shell)";
        /// A Python script run with `python3` (XXL-JOB 2.4 ran `python`).
        GluePython => "GLUE_PYTHON", "GLUE(Python)";
        /// A Python 2 script run with `python` (XXL-JOB 3.2+).
        GluePython2 => "GLUE_PYTHON2", "GLUE(Python2)";
        /// A PHP script run with `php`.
        GluePhp => "GLUE_PHP", "GLUE(PHP)";
        /// A Node.js script run with `node`.
        GlueNodejs => "GLUE_NODEJS", "GLUE(Nodejs)";
        /// A PowerShell script run with `pwsh`.
        GluePowershell => "GLUE_POWERSHELL", "GLUE(PowerShell)";
    }
}

impl GlueType {
    /// True for the script types an executor runs as a child process.
    pub const fn is_script(self) -> bool {
        !matches!(self, GlueType::Bean | GlueType::GlueGroovy)
    }

    /// The file suffix XXL-JOB gives a script of this type (`.sh`, `.py`, …); empty for non-scripts.
    pub const fn script_suffix(self) -> &'static str {
        match self {
            GlueType::GlueShell => ".sh",
            GlueType::GluePython | GlueType::GluePython2 => ".py",
            GlueType::GluePhp => ".php",
            GlueType::GlueNodejs => ".js",
            GlueType::GluePowershell => ".ps1",
            GlueType::Bean | GlueType::GlueGroovy => "",
        }
    }
}

wire_enum! {
    /// The `registryGroup` of a registry call; executors always send `EXECUTOR`.
    RegistryGroup, "registry group" {
        /// An executor registering its address.
        Executor => "EXECUTOR", "Executor";
        /// Defined by XXL-JOB, never used.
        Admin => "ADMIN", "Admin";
    }
}

wire_enum! {
    /// The protocol generation an admin uses to call the executors of a group
    /// (see the protocol generations table in Chime's protocol notes).
    ProtocolGeneration, "protocol generation" {
        /// XXL-JOB 2.4.x to 3.2: `{code,msg,content}`, trigger at `/run`.
        G2 => "G2", "XXL-JOB 2.4 – 3.2";
        /// XXL-JOB 3.3.0 to 3.4.2: `{code,msg,data}`, trigger at `/run`.
        G3 => "G3", "XXL-JOB 3.3 – 3.4";
        /// XXL-JOB 3.5: trigger at `/trigger`, `XXL-JOB-APPNAME` header.
        G4 => "G4", "XXL-JOB 3.5";
    }
}

impl Default for ProtocolGeneration {
    /// Almost every executor in the field speaks G2.
    fn default() -> Self {
        ProtocolGeneration::G2
    }
}

impl ProtocolGeneration {
    /// The executor path that accepts a trigger in this generation.
    pub const fn trigger_path(self) -> &'static str {
        match self {
            ProtocolGeneration::G2 | ProtocolGeneration::G3 => "/run",
            ProtocolGeneration::G4 => "/trigger",
        }
    }
}

/// Deserializes an optional enum leniently: `null`, a missing key or an empty string give `None`.
pub(crate) fn opt_enum<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err = UnknownVariant>,
{
    match crate::lenient::opt_string(deserializer)? {
        None => Ok(None),
        Some(s) if s.trim().is_empty() => Ok(None),
        Some(s) => s.parse().map(Some).map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_round_trips_through_its_wire_string() {
        fn check<T: FromStr<Err = UnknownVariant> + fmt::Display + PartialEq + fmt::Debug + Copy>(all: &[T]) {
            for v in all {
                assert_eq!(v.to_string().parse::<T>().unwrap(), *v);
                let json = serde_json::to_string(&v.to_string()).unwrap();
                assert!(json.contains(&v.to_string()));
            }
        }
        check(ScheduleType::ALL);
        check(MisfireStrategy::ALL);
        check(RouteStrategy::ALL);
        check(BlockStrategy::ALL);
        check(TriggerType::ALL);
        check(GlueType::ALL);
        check(RegistryGroup::ALL);
        check(ProtocolGeneration::ALL);
    }

    #[test]
    fn unknown_value_names_the_enum_and_the_choices() {
        let err = "ROUND_ROBIN".parse::<RouteStrategy>().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("route strategy"), "{text}");
        assert!(text.contains("ROUND_ROBIN"), "{text}");
        assert!(text.contains("SHARDING_BROADCAST"), "{text}");
    }

    #[test]
    fn serde_uses_wire_spelling() {
        assert_eq!(
            serde_json::to_string(&BlockStrategy::CoverEarly).unwrap(),
            "\"COVER_EARLY\""
        );
        let parsed: GlueType = serde_json::from_str("\"GLUE_POWERSHELL\"").unwrap();
        assert_eq!(parsed, GlueType::GluePowershell);
        assert!(serde_json::from_str::<GlueType>("\"GLUE_COBOL\"").is_err());
    }

    #[test]
    fn script_types_have_suffixes() {
        for g in GlueType::ALL {
            assert_eq!(g.is_script(), !g.script_suffix().is_empty(), "{g}");
        }
    }
}
