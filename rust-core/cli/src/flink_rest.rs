//! The parts of Flink's REST API that `fragstate tune` uses (checked against
//! the 2.2.1 distribution; the responses in `tests/data/flink-2.2.1/` are
//! real ones): the running job, its input record count and restarts, and
//! checkpoints triggered on demand. The parsing is kept apart from the HTTP calls so it
//! is tested on those responses.

use std::time::Duration;

use fragstate_core::{Error, Result};
use serde_json::Value;

/// A Flink cluster's REST endpoint.
pub(crate) struct FlinkRest {
    base: String,
    agent: ureq::Agent,
}

/// Where a triggered checkpoint is.
#[derive(Debug, PartialEq)]
pub(crate) enum CheckpointStatus {
    InProgress,
    Completed { id: u64 },
    Failed { cause: String },
}

impl FlinkRest {
    /// `base`: `http://HOST:PORT` of the JobManager's REST endpoint; every call within `timeout`.
    pub(crate) fn new(base: &str, timeout: Duration) -> Result<FlinkRest> {
        if !base.starts_with("http://") {
            return Err(Error::invalid("--flink", base, "http://HOST:PORT of the JobManager's REST endpoint (https is not supported)"));
        }
        let agent = ureq::Agent::config_builder().timeout_global(Some(timeout)).build().into();
        Ok(FlinkRest { base: base.trim_end_matches('/').to_string(), agent })
    }

    fn get(&self, path: &str) -> Result<Value> {
        let url = format!("{}{path}", self.base);
        let mut r = self.agent.get(&url).call().map_err(|e| rest_error(&url, e))?;
        r.body_mut().read_json().map_err(|e| rest_error(&url, e))
    }

    /// The id of the one running job.
    pub(crate) fn running_job(&self) -> Result<String> {
        running_job(&self.get("/jobs/overview")?)
    }

    /// Input records the job's sources have emitted since the job (re)started.
    pub(crate) fn source_records(&self, job: &str) -> Result<u64> {
        source_records(&self.get(&format!("/jobs/{job}"))?)
    }

    /// The job's restarts since it was submitted to this JobManager (the `numRestarts` job metric).
    pub(crate) fn restarts(&self, job: &str) -> Result<u64> {
        num_restarts(&self.get(&format!("/jobs/{job}/metrics?get=numRestarts"))?)
    }

    /// Triggers a checkpoint of the configured type; the request id to poll.
    pub(crate) fn trigger_checkpoint(&self, job: &str) -> Result<String> {
        let url = format!("{}/jobs/{job}/checkpoints", self.base);
        let mut r = self.agent.post(&url).send_json(serde_json::json!({"checkpointType": "CONFIGURED"})).map_err(|e| rest_error(&url, e))?;
        let v: Value = r.body_mut().read_json().map_err(|e| rest_error(&url, e))?;
        v["request-id"].as_str().map(str::to_string).ok_or_else(|| Error::format("Flink checkpoint trigger answer", v.to_string()))
    }

    pub(crate) fn checkpoint_status(&self, job: &str, request: &str) -> Result<CheckpointStatus> {
        checkpoint_status(&self.get(&format!("/jobs/{job}/checkpoints/{request}"))?)
    }

    /// Seconds from trigger to the last acknowledgement of completed checkpoint `id`, as Flink measured it.
    pub(crate) fn checkpoint_duration_s(&self, job: &str, id: u64) -> Result<f64> {
        checkpoint_duration_s(&self.get(&format!("/jobs/{job}/checkpoints/details/{id}"))?)
    }
}

fn rest_error(url: &str, e: ureq::Error) -> Error {
    Error::io(format!("Flink REST call {url}"), std::io::Error::other(e.to_string()))
}

fn running_job(overview: &Value) -> Result<String> {
    let running: Vec<&str> = overview["jobs"]
        .as_array()
        .ok_or_else(|| Error::format("Flink /jobs/overview", overview.to_string()))?
        .iter()
        .filter(|j| j["state"] == "RUNNING")
        .filter_map(|j| j["jid"].as_str())
        .collect();
    match running.as_slice() {
        [one] => Ok(one.to_string()),
        other => Err(Error::invalid("running Flink jobs", other.len(), "exactly 1 (name the job with --job)")),
    }
}

/// The records written by the job's sources: the vertices no other vertex feeds (no `inputs` in the plan).
fn source_records(job: &Value) -> Result<u64> {
    let bad = || Error::format("Flink /jobs/<id> answer", "no plan nodes or vertex metrics");
    let nodes = job["plan"]["nodes"].as_array().ok_or_else(bad)?;
    let sources: Vec<&str> = nodes.iter().filter(|n| n.get("inputs").is_none()).filter_map(|n| n["id"].as_str()).collect();
    if sources.is_empty() {
        return Err(bad());
    }
    let vertices = job["vertices"].as_array().ok_or_else(bad)?;
    let mut total = 0;
    for v in vertices.iter().filter(|v| v["id"].as_str().is_some_and(|id| sources.contains(&id))) {
        total += v["metrics"]["write-records"].as_u64().ok_or_else(bad)?;
    }
    Ok(total)
}

/// `[{"id": "numRestarts", "value": "3"}]`: Flink's job metrics answer values as strings.
fn num_restarts(v: &Value) -> Result<u64> {
    v.as_array()
        .and_then(|metrics| metrics.iter().find(|m| m["id"] == "numRestarts"))
        .and_then(|m| m["value"].as_str())
        .and_then(|value| value.parse().ok())
        .ok_or_else(|| Error::format("Flink /jobs/<id>/metrics?get=numRestarts answer", v.to_string()))
}

fn checkpoint_status(v: &Value) -> Result<CheckpointStatus> {
    match v["status"]["id"].as_str() {
        Some("IN_PROGRESS") => Ok(CheckpointStatus::InProgress),
        Some("COMPLETED") => {
            let op = &v["operation"];
            if let Some(cause) = op.get("failure-cause") {
                let text = cause["stack-trace"].as_str().and_then(|s| s.lines().next()).map(str::to_string).unwrap_or_else(|| cause.to_string());
                return Ok(CheckpointStatus::Failed { cause: text });
            }
            op["checkpointId"].as_u64().map(|id| CheckpointStatus::Completed { id }).ok_or_else(|| Error::format("Flink checkpoint status", v.to_string()))
        }
        _ => Err(Error::format("Flink checkpoint status", v.to_string())),
    }
}

fn checkpoint_duration_s(details: &Value) -> Result<f64> {
    details["end_to_end_duration"].as_u64().map(|ms| ms as f64 / 1_000.0).ok_or_else(|| Error::format("Flink checkpoint details", details.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let path = format!("{}/tests/data/flink-2.2.1/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    #[test]
    fn the_running_job_of_a_real_overview() {
        assert_eq!(running_job(&fixture("overview.json")).unwrap(), "3088210a911e158da58432d7cf2a8654");
        let none = serde_json::json!({"jobs": [{"jid": "a", "state": "FINISHED"}]});
        let e = running_job(&none).unwrap_err().to_string();
        assert!(e.contains("= 0") && e.contains("--job"), "{e}");
    }

    #[test]
    fn source_records_of_the_traffic_monitoring_job() {
        // The Kafka source vertex wrote 89,940 records; the other vertices have inputs.
        assert_eq!(source_records(&fixture("job.json")).unwrap(), 89_940);
        assert!(source_records(&serde_json::json!({"vertices": []})).is_err());
    }

    #[test]
    fn checkpoint_statuses() {
        let done = serde_json::json!({"status": {"id": "COMPLETED"}, "operation": {"checkpointId": 1794}});
        assert_eq!(checkpoint_status(&done).unwrap(), CheckpointStatus::Completed { id: 1794 });
        assert_eq!(checkpoint_status(&serde_json::json!({"status": {"id": "IN_PROGRESS"}})).unwrap(), CheckpointStatus::InProgress);
        let failed = serde_json::json!({"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {"class": "x", "stack-trace": "java.util.concurrent.CompletionException: declined\n\tat ..."}}});
        assert_eq!(checkpoint_status(&failed).unwrap(), CheckpointStatus::Failed { cause: "java.util.concurrent.CompletionException: declined".into() });
        assert!(checkpoint_status(&serde_json::json!({})).is_err());
    }

    #[test]
    fn checkpoint_duration_from_its_details() {
        // the fields of /jobs/<id>/checkpoints/details/<checkpoint> that matter (CheckpointStatistics)
        let details = serde_json::json!({"className": "completed", "id": 7, "status": "COMPLETED", "is_savepoint": false,
            "trigger_timestamp": 1_764_870_000_000u64, "latest_ack_timestamp": 1_764_870_000_640u64, "end_to_end_duration": 640});
        assert_eq!(checkpoint_duration_s(&details).unwrap(), 0.64);
        assert!(checkpoint_duration_s(&serde_json::json!({"status": "IN_PROGRESS"})).is_err());
    }

    #[test]
    fn restarts_from_the_job_metric() {
        // captured from the evaluation's job, 70 s after one TaskManager was killed (two regions failed)
        assert_eq!(num_restarts(&fixture("num-restarts.json")).unwrap(), 2);
        // a job not yet running answers without the metric
        let e = num_restarts(&serde_json::json!([])).unwrap_err().to_string();
        assert!(e.contains("numRestarts"), "{e}");
        assert!(num_restarts(&serde_json::json!([{"id": "numRestarts", "value": "-1"}])).is_err());
    }

    #[test]
    fn only_plain_http_endpoints() {
        let e = FlinkRest::new("localhost:8081", Duration::from_secs(1)).err().unwrap().to_string();
        assert!(e.contains("--flink") && e.contains("http://"), "{e}");
    }
}
