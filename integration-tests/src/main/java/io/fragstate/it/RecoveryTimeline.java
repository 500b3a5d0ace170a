package io.fragstate.it;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What happened between a kill and the job running again, from the JobManager's REST API
 * (timestamps are epoch millis of the JobManager, which runs on this machine, so they compare
 * with the harness' clock).
 */
public final class RecoveryTimeline {
    /** {@link Scenario.Kind} name. */
    public String kind = "";
    /** When the disruption started (the kill, the cluster stop, the savepoint request). */
    public long killAtMs;
    /** Named steps of planned disruptions, ms after {@link #killAtMs}. */
    public java.util.Map<String, Long> phases = new java.util.LinkedHashMap<>();
    /** Checkpoint or savepoint path a resubmitted job was started from. */
    public String restoredFrom = "";
    public List<String> killedTaskManagers = new ArrayList<>();
    public List<Long> killedPids = new ArrayList<>();
    /** Stateful (window) subtasks that ran on the killed TaskManagers. */
    public List<String> statefulSubtasksOnKilled = new ArrayList<>();
    /** Timestamp of the first failure the JobManager recorded after the kill. */
    public long failureDetectedAtMs = -1;
    public String firstFailure = "";
    /** Number of restores (restarts from a checkpoint) caused by this kill. */
    public long restores;
    public long restoredCheckpointId = -1;
    public long restoreTimestampMs = -1;
    /** Latest INITIALIZING->RUNNING transition of the current attempts: the job runs fully again. */
    public long allRunningAtMs = -1;
    /** First checkpoint completed after recovery: from then on the exactly-once sink commits output again. */
    public long firstCheckpointAfterRecoveryId = -1;
    public long firstCheckpointAfterRecoveryAtMs = -1;
    public List<SubtaskRecovery> subtasks = new ArrayList<>();

    /** One subtask's current attempt after recovery. */
    public static final class SubtaskRecovery {
        public String vertex;
        public int subtask;
        public int attempt;
        public String taskManager;
        public long deployingAtMs;
        public long initializingAtMs;
        public long runningAtMs;
        /** INITIALIZING -> RUNNING: state restore and operator setup. */
        public long initializingMs;
    }

    public long detectionMs() {
        return failureDetectedAtMs < 0 ? -1 : failureDetectedAtMs - killAtMs;
    }

    public long killToRunningMs() {
        return allRunningAtMs < 0 ? -1 : allRunningAtMs - killAtMs;
    }

    public long killToFirstCheckpointMs() {
        return firstCheckpointAfterRecoveryAtMs < 0 ? -1 : firstCheckpointAfterRecoveryAtMs - killAtMs;
    }

    /** Fills the per-subtask part from /jobs/:id/vertices/:vid (and subtasktimes). */
    void collectSubtasks(FlinkRest rest, String jobId, Set<String> statefulVertexNames) {
        subtasks.clear();
        long latest = -1;
        for (JsonNode v : rest.job(jobId).path("vertices")) {
            String vid = v.path("id").asText();
            String name = v.path("name").asText();
            JsonNode details = rest.get("/jobs/" + jobId + "/vertices/" + vid);
            JsonNode times = rest.get("/jobs/" + jobId + "/vertices/" + vid + "/subtasktimes");
            for (JsonNode s : details.path("subtasks")) {
                SubtaskRecovery r = new SubtaskRecovery();
                r.vertex = name;
                r.subtask = s.path("subtask").asInt();
                r.attempt = s.path("attempt").asInt();
                r.taskManager = s.path("taskmanager-id").asText();
                for (JsonNode t : times.path("subtasks")) {
                    if (t.path("subtask").asInt() == r.subtask) {
                        JsonNode ts = t.path("timestamps");
                        r.deployingAtMs = ts.path("DEPLOYING").asLong();
                        r.initializingAtMs = ts.path("INITIALIZING").asLong();
                        r.runningAtMs = ts.path("RUNNING").asLong();
                    }
                }
                r.initializingMs = r.runningAtMs > 0 && r.initializingAtMs > 0 ? r.runningAtMs - r.initializingAtMs : -1;
                if (r.runningAtMs >= killAtMs) {
                    latest = Math.max(latest, r.runningAtMs);
                }
                subtasks.add(r);
            }
        }
        allRunningAtMs = latest;
    }

    /** Max INITIALIZING->RUNNING over the subtasks of vertices whose name contains {@code part}. */
    public long maxInitializingMs(String part) {
        return subtasks.stream().filter(s -> s.vertex.contains(part)).mapToLong(s -> s.initializingMs).max().orElse(-1);
    }

    public long minInitializingMs(String part) {
        return subtasks.stream().filter(s -> s.vertex.contains(part)).mapToLong(s -> s.initializingMs).min().orElse(-1);
    }

    public String summary() {
        if (!"KILL_TASKMANAGERS".equals(kind) && !kind.isEmpty()) {
            return String.format("%s at %d: steps %s, restored checkpoint %d, all %d subtasks RUNNING after %d ms, "
                            + "window subtasks INITIALIZING->RUNNING %d..%d ms, first checkpoint (#%d) after %d ms",
                    kind, killAtMs, phases, restoredCheckpointId, subtasks.size(), killToRunningMs(),
                    minInitializingMs("window"), maxInitializingMs("window"), firstCheckpointAfterRecoveryId,
                    killToFirstCheckpointMs());
        }
        return String.format("kill -9 %s at %d: failure detected after %d ms (%s), %d restore(s) from checkpoint %d, "
                        + "all %d subtasks RUNNING after %d ms, window subtasks INITIALIZING->RUNNING %d..%d ms, "
                        + "first checkpoint after recovery (#%d, output committed again) after %d ms",
                killedTaskManagers, killAtMs, detectionMs(), firstFailure, restores, restoredCheckpointId,
                subtasks.size(), killToRunningMs(), minInitializingMs("window"), maxInitializingMs("window"),
                firstCheckpointAfterRecoveryId, killToFirstCheckpointMs());
    }
}
