//! Bodies of XXL-JOB 3.5's job-management API: `/api/addJob`, `/api/updateJob`,
//! `/api/removeJob`, `/api/startJob`, `/api/stopJob` and `/api/triggerJob`, which tools call
//! with an executor's app name and access token to create and manage jobs at start-up.
//!
//! Parsing is as lenient as the other wire types (numbers as strings, `null` for absent), and
//! a field that is not given stays `None`: the admin then takes its default on add and keeps
//! the job's value on update.

use crate::lenient;
use serde::{Deserialize, Serialize};

/// The uris of the job API, served on the same `/api/<uri>` endpoint as the executor calls.
pub const JOB_API_URIS: [&str; 6] = ["addJob", "updateJob", "removeJob", "startJob", "stopJob", "triggerJob"];

/// True when `uri` is one of [`JOB_API_URIS`].
pub fn is_job_api_uri(uri: &str) -> bool {
    JOB_API_URIS.contains(&uri)
}

/// The fields a job is described by, shared by `addJob` and `updateJob` (XXL-JOB's
/// `JobAddRequest` / `JobUpdateRequest` without the group and the id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobFields {
    /// What the job does (XXL-JOB 3.5's `name`, 2.x's `jobDesc`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub name: Option<String>,
    /// Who owns the job.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub author: Option<String>,
    /// Comma-separated alarm addresses.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub alarm_email: Option<String>,
    /// `CRON`, `FIX_RATE` or `NONE`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub schedule_type: Option<String>,
    /// The cron expression, or the fixed rate in seconds.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub schedule_conf: Option<String>,
    /// `DO_NOTHING` or `FIRE_ONCE_NOW`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub misfire_strategy: Option<String>,
    /// Route strategy name (`FIRST`, `ROUND`, …).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub executor_route_strategy: Option<String>,
    /// The BEAN handler's name.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub executor_handler: Option<String>,
    /// The parameter sent with each run.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub executor_param: Option<String>,
    /// Block strategy name (`SERIAL_EXECUTION`, …).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub executor_block_strategy: Option<String>,
    /// Seconds a run may take (0: no limit).
    #[serde(default, deserialize_with = "lenient::opt_i64")]
    pub executor_timeout: Option<i64>,
    /// Retries after a failure.
    #[serde(default, deserialize_with = "lenient::opt_i64")]
    pub executor_fail_retry_count: Option<i64>,
    /// `BEAN` or a script type (`GLUE_SHELL`, …).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub glue_type: Option<String>,
    /// A script job's source.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub glue_source: Option<String>,
    /// A note on the script's version (not kept by Chime).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub glue_remark: Option<String>,
}

/// The body of `addJob` (XXL-JOB's `JobAddRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobAddRequest {
    /// The executor group's id (0 when not given).
    #[serde(default, deserialize_with = "lenient::i64")]
    pub job_group: i64,
    /// The job itself.
    #[serde(flatten)]
    pub job: JobFields,
}

/// The body of `updateJob` (XXL-JOB's `JobUpdateRequest`): the job's id and its fields; a
/// `jobGroup` in it is ignored, as XXL-JOB ignores it (an update keeps the job's group).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobUpdateRequest {
    /// The job's id (0 when not given).
    #[serde(default, deserialize_with = "lenient::i64")]
    pub id: i64,
    /// The job's new fields.
    #[serde(flatten)]
    pub job: JobFields,
}

/// The body of `removeJob`, `startJob` and `stopJob` (XXL-JOB's `JobOperateRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobOperateRequest {
    /// The job's id (0 when not given).
    #[serde(default, deserialize_with = "lenient::i64")]
    pub id: i64,
}

/// The body of `triggerJob` (XXL-JOB's `JobTriggerRequest`): run the job once, now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobTriggerRequest {
    /// The job's id (0 when not given).
    #[serde(default, deserialize_with = "lenient::i64")]
    pub id: i64,
    /// The parameter of this run; `None` (absent or `null`) is sent as `""`, as XXL-JOB does.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub executor_param: Option<String>,
    /// Executor addresses to run on, comma-separated; `None` or blank: the group's own.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub address_list: Option<String>,
}

impl JobTriggerRequest {
    /// The addresses of [`JobTriggerRequest::address_list`], trimmed, blanks left out.
    pub fn addresses(&self) -> Vec<&str> {
        self.address_list
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_request_reads_every_field_and_lenient_numbers() {
        let r: JobAddRequest = serde_json::from_str(
            r#"{"jobGroup":"3","name":"n","author":"a","alarmEmail":"x@y","scheduleType":"CRON",
                "scheduleConf":"0 0 * * * ?","misfireStrategy":"DO_NOTHING","executorRouteStrategy":"ROUND",
                "executorHandler":"h","executorParam":"p","executorBlockStrategy":"DISCARD_LATER",
                "executorTimeout":"30","executorFailRetryCount":2,"glueType":"BEAN","glueSource":null,
                "glueRemark":"r","childJobId":"9","unknown":true}"#,
        )
        .unwrap();
        assert_eq!(r.job_group, 3);
        assert_eq!(r.job.name.as_deref(), Some("n"));
        assert_eq!(r.job.schedule_conf.as_deref(), Some("0 0 * * * ?"));
        assert_eq!(r.job.executor_route_strategy.as_deref(), Some("ROUND"));
        assert_eq!(r.job.executor_timeout, Some(30));
        assert_eq!(r.job.executor_fail_retry_count, Some(2));
        assert_eq!(r.job.glue_source, None);
        assert_eq!(r.job.glue_remark.as_deref(), Some("r"));
    }

    #[test]
    fn absent_fields_stay_absent() {
        let r: JobUpdateRequest = serde_json::from_str(r#"{"id":7,"jobGroup":99,"executorTimeout":""}"#).unwrap();
        assert_eq!(r.id, 7);
        assert_eq!(r.job, JobFields::default());
        let empty: JobAddRequest = serde_json::from_str("{}").unwrap();
        assert_eq!(empty.job_group, 0);
    }

    #[test]
    fn bad_numbers_are_refused() {
        assert!(serde_json::from_str::<JobAddRequest>(r#"{"jobGroup":"x"}"#).is_err());
        assert!(serde_json::from_str::<JobAddRequest>(r#"{"executorTimeout":"soon"}"#).is_err());
        assert!(serde_json::from_str::<JobOperateRequest>(r#"{"id":1.5}"#).is_err());
    }

    #[test]
    fn trigger_addresses_are_split_and_trimmed() {
        let r: JobTriggerRequest =
            serde_json::from_str(r#"{"id":"5","executorParam":null,"addressList":" http://a:1 ,,http://b:2/ "}"#)
                .unwrap();
        assert_eq!(r.id, 5);
        assert_eq!(r.executor_param, None);
        assert_eq!(r.addresses(), vec!["http://a:1", "http://b:2/"]);
        let none: JobTriggerRequest = serde_json::from_str(r#"{"id":5}"#).unwrap();
        assert!(none.addresses().is_empty());
    }

    #[test]
    fn uris_are_known() {
        assert!(is_job_api_uri("addJob"));
        assert!(!is_job_api_uri("registry"));
    }
}
