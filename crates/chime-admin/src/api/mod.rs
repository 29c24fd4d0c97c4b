//! The REST API's bodies and answers (`/v1`), apart from how Chime stores and checks them.
//!
//! Each type derives serde for the wire and `schemars` for its JSON Schema, from which the
//! OpenAPI document's component schemas are generated ([`schema::components`]); the `chime`
//! CLI sends and reads these same types, and the console reads the schemas. A job's descriptive
//! fields are declared once, in [`job_info`].

pub mod alarm_channels;
pub mod alarm_events;
pub mod alarm_policy;
pub mod alarm_silences;
pub mod api_keys;
mod backfills;
pub mod calendar_ics;
pub mod calendars;
mod groups;
mod invalid;
pub mod job_flow;
pub mod job_info;
mod jobs;
pub mod limits;
pub mod roles;
pub mod schedule;
pub mod schema;

pub use alarm_channels::{
    AlarmChannel, AlarmChannelSpec, AlarmDelivery, AlarmEvent, ChannelDraft, ChannelKind, DeliveryState,
};
pub use alarm_events::{AlarmEventEntry, AlarmFact};
pub use alarm_silences::{AlarmSilence, AlarmSilenceSpec, SilenceDraft};
pub use api_keys::{ApiKey, ApiKeySpec, KeyDraft, KeyRole, KeyState, NewApiKey, TOKEN_PREFIX};
pub use backfills::{Backfill, BackfillSpec, BackfillState};
pub use calendars::{BusinessCalendar, BusinessCalendarSpec, CalendarDate, CalendarDays};
pub use groups::{AddressType, Group, GroupSpec};
pub use invalid::{is_plain_name, Invalid};
pub use job_flow::{JobFlow, JobFlowPatch};
pub use job_info::{JobInfo, JobInfoPatch};
pub use jobs::{Job, JobSpec, JobTaskPatch};
pub use limits::{Limit, LimitRule, LimitSpec, QueuedRunEntry};
pub use roles::{GroupGrant, GroupMember, GroupRole, MemberChange};
pub(crate) use schedule::schedule_fields;
pub use schedule::{calendar_with_more, check_more_schedules, check_schedule, MoreSchedule, Schedule, SchedulePatch};
