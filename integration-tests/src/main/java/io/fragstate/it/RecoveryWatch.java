package io.fragstate.it;

import static io.fragstate.it.Waits.waitFor;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Watches one job recover from the loss of TaskManagers, through the JobManager's REST API: what
 * ran where before the kill, when the job counts as recovered, the first failure the JobManager
 * recorded, and the first checkpoint completed afterwards. Shared by the recovery scenarios
 * ({@link Disruptions}) and the recovery benchmark ({@link BenchRun}).
 */
final class RecoveryWatch {
    private final FlinkRest rest;
    private final String jobId;
    private final List<String> victims;
    private final Map<String, Integer> attemptsBefore;
    private final Set<String> onVictims;
    private final long restoredBefore;
    /** Whether a checkpoint had completed before the kill: without one the job restarts from nothing. */
    private final boolean checkpointBefore;

    /** Takes the "before" picture; call it right before killing {@code victims}. */
    RecoveryWatch(FlinkRest rest, String jobId, List<String> victims) {
        this.rest = rest;
        this.jobId = jobId;
        this.victims = List.copyOf(victims);
        this.attemptsBefore = attempts(rest, jobId);
        this.onVictims = subtasksOn(rest, jobId, victims);
        JsonNode counts = rest.checkpoints(jobId).path("counts");
        this.restoredBefore = counts.path("restored").asLong();
        this.checkpointBefore = counts.path("completed").asLong() > 0;
    }

    /**
     * Recovered = the JobManager recorded a failure after the kill, every subtask that ran on a
     * killed TaskManager runs again in a newer attempt, the dead TaskManagers are gone from the
     * cluster, every subtask is RUNNING and a restore was counted — if a checkpoint had completed
     * before the kill; without one Flink restarts the job from nothing and counts no restore (a
     * kill before the first checkpoint of a long interval). (REST answers come from a cache
     * refreshed every web.refresh-interval, so a stale "all RUNNING" from before the kill must not
     * count.) Fills the restore, failure and per-subtask parts of {@code tl}.
     */
    void awaitRecovered(RecoveryTimeline tl, Duration timeout) throws Exception {
        waitFor("recovery", timeout, () -> {
            if (firstFailureAfter(rest, jobId, tl) < 0 || !rest.allRunning(jobId)
                    || rest.registeredTaskManagers().stream().anyMatch(victims::contains)) {
                return false;
            }
            Map<String, Integer> now = attempts(rest, jobId);
            for (Map.Entry<String, Integer> e : attemptsBefore.entrySet()) {
                if (onVictims.contains(e.getKey()) && now.getOrDefault(e.getKey(), -1) <= e.getValue()) {
                    return false;
                }
            }
            return !checkpointBefore || rest.checkpoints(jobId).path("counts").path("restored").asLong() > restoredBefore;
        });
        JsonNode cps = rest.checkpoints(jobId);
        tl.restores = cps.path("counts").path("restored").asLong() - restoredBefore;
        recordRestore(tl, cps);
        firstFailureAfter(rest, jobId, tl);
        tl.collectSubtasks(rest, jobId, Set.of());
    }

    /** The restored checkpoint's id and restore time from {@code /jobs/:id/checkpoints}. */
    static void recordRestore(RecoveryTimeline tl, JsonNode cps) {
        tl.restoredCheckpointId = cps.path("latest").path("restored").path("id").asLong(-1);
        tl.restoreTimestampMs = cps.path("latest").path("restored").path("restore_timestamp").asLong(-1);
    }

    /**
     * Waits for a checkpoint triggered once every subtask ran again, then records the first such
     * completed checkpoint: from then on an exactly-once sink commits output again.
     */
    static void awaitFirstCheckpoint(FlinkRest rest, String jobId, RecoveryTimeline tl, String what, Duration timeout)
            throws Exception {
        long allRunning = tl.allRunningAtMs;
        waitFor(what, timeout, () ->
                rest.checkpoints(jobId).path("latest").path("completed").path("trigger_timestamp").asLong() >= allRunning);
        for (JsonNode h : rest.checkpoints(jobId).path("history")) {
            if ("COMPLETED".equals(h.path("status").asText()) && h.path("trigger_timestamp").asLong() >= allRunning
                    && (tl.firstCheckpointAfterRecoveryId < 0 || h.path("id").asLong() < tl.firstCheckpointAfterRecoveryId)) {
                tl.firstCheckpointAfterRecoveryId = h.path("id").asLong();
                tl.firstCheckpointAfterRecoveryAtMs = h.path("latest_ack_timestamp").asLong();
            }
        }
    }

    /** "vertex#subtask" -> current attempt number, for every subtask of the job. */
    private static Map<String, Integer> attempts(FlinkRest rest, String jobId) {
        Map<String, Integer> m = new HashMap<>();
        for (JsonNode v : rest.job(jobId).path("vertices")) {
            String vid = v.path("id").asText();
            for (JsonNode s : rest.get("/jobs/" + jobId + "/vertices/" + vid).path("subtasks")) {
                m.put(vid + "#" + s.path("subtask").asInt(), s.path("attempt").asInt());
            }
        }
        return m;
    }

    /** "vertex#subtask" of every subtask running on one of the TaskManagers. */
    private static Set<String> subtasksOn(FlinkRest rest, String jobId, List<String> taskManagers) {
        Set<String> out = new HashSet<>();
        for (JsonNode v : rest.job(jobId).path("vertices")) {
            String vid = v.path("id").asText();
            for (JsonNode s : rest.get("/jobs/" + jobId + "/vertices/" + vid).path("subtasks")) {
                if (taskManagers.contains(s.path("taskmanager-id").asText())) {
                    out.add(vid + "#" + s.path("subtask").asInt());
                }
            }
        }
        return out;
    }

    /** Fills the first failure recorded at or after the kill; returns its timestamp or -1. */
    private static long firstFailureAfter(FlinkRest rest, String jobId, RecoveryTimeline tl) {
        tl.failureDetectedAtMs = -1;
        for (JsonNode e : rest.get("/jobs/" + jobId + "/exceptions").path("exceptionHistory").path("entries")) {
            long ts = e.path("timestamp").asLong();
            if (ts >= tl.killAtMs && (tl.failureDetectedAtMs < 0 || ts < tl.failureDetectedAtMs)) {
                tl.failureDetectedAtMs = ts;
                tl.firstFailure = e.path("exceptionName").asText().replaceAll(".*\\.", "") + " in "
                        + e.path("taskName").asText() + " on " + e.path("taskManagerId").asText();
            }
        }
        return tl.failureDetectedAtMs;
    }
}
