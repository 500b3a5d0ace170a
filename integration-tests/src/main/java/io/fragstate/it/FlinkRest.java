package io.fragstate.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/** The few JobManager REST calls the harness needs (JSON via Jackson). */
final class FlinkRest {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private final String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    FlinkRest(String baseUrl) {
        this.base = baseUrl;
    }

    JsonNode get(String path) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(10)).GET().build();
        try {
            HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("GET " + path + " -> HTTP " + r.statusCode() + ": " + Shell.tail(r.body(), 500));
            }
            return MAPPER.readTree(r.body());
        } catch (IOException e) {
            throw new IllegalStateException("GET " + base + path + " failed: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * Triggers a checkpoint of the configured type ({@code POST /jobs/<id>/checkpoints}, Flink 2.x)
     * and returns its request id, for {@link #checkpointTriggerStatus}.
     */
    String triggerCheckpoint(String jobId) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + "/jobs/" + jobId + "/checkpoints"))
                .timeout(Duration.ofSeconds(10)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"checkpointType\":\"CONFIGURED\"}")).build();
        try {
            HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 202 && r.statusCode() != 200) {
                throw new IllegalStateException("POST /jobs/" + jobId + "/checkpoints -> HTTP " + r.statusCode() + ": "
                        + Shell.tail(r.body(), 500));
            }
            return MAPPER.readTree(r.body()).path("request-id").asText();
        } catch (IOException e) {
            throw new IllegalStateException("POST " + base + "/jobs/" + jobId + "/checkpoints failed: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** {@code IN_PROGRESS} or {@code COMPLETED} of a triggered checkpoint, or {@code FAILED: <cause>}. */
    String checkpointTriggerStatus(String jobId, String requestId) {
        JsonNode r = get("/jobs/" + jobId + "/checkpoints/" + requestId);
        String status = r.path("status").path("id").asText();
        JsonNode failure = r.path("operation").path("failure-cause");
        return failure.isMissingNode() || failure.isNull() ? status : "FAILED: " + Shell.tail(failure.toString(), 300);
    }

    /** The REST endpoint, e.g. {@code http://127.0.0.1:8081}. */
    String baseUrl() {
        return base;
    }

    void cancel(String jobId) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + "/jobs/" + jobId + "?mode=cancel"))
                .timeout(Duration.ofSeconds(10)).method("PATCH", HttpRequest.BodyPublishers.noBody()).build();
        try {
            http.send(req, HttpResponse.BodyHandlers.discarding());
        } catch (IOException e) {
            // best effort during teardown
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    JsonNode job(String jobId) {
        return get("/jobs/" + jobId);
    }

    JsonNode checkpoints(String jobId) {
        return get("/jobs/" + jobId + "/checkpoints");
    }

    long completedCheckpoints(String jobId) {
        return checkpoints(jobId).path("counts").path("completed").asLong();
    }

    /** A metric summed over the subtasks of a vertex (the JobManager's metric store), or -1 when it has none yet. */
    double subtaskMetricSum(String jobId, String vertexId, String metric) {
        for (JsonNode m : get("/jobs/" + jobId + "/vertices/" + vertexId + "/subtasks/metrics?get=" + metric + "&agg=sum")) {
            return m.path("sum").asDouble(-1);
        }
        return -1;
    }

    /** Vertex id of the first vertex whose name contains {@code namePart}. */
    String vertexId(String jobId, String namePart) {
        for (JsonNode v : job(jobId).path("vertices")) {
            if (v.path("name").asText().contains(namePart)) {
                return v.path("id").asText();
            }
        }
        throw new IllegalStateException("job " + jobId + " has no vertex named like '" + namePart + "'");
    }

    /** Resource ids of the TaskManagers that run subtasks of the vertex. */
    Set<String> taskManagersOf(String jobId, String vertexId) {
        Set<String> tms = new LinkedHashSet<>();
        for (JsonNode s : get("/jobs/" + jobId + "/vertices/" + vertexId).path("subtasks")) {
            tms.add(s.path("taskmanager-id").asText());
        }
        return tms;
    }

    List<String> registeredTaskManagers() {
        List<String> ids = new ArrayList<>();
        for (JsonNode tm : get("/taskmanagers").path("taskmanagers")) {
            ids.add(tm.path("id").asText());
        }
        return ids;
    }

    /** True when the job is RUNNING and every subtask of every vertex is RUNNING. */
    boolean allRunning(String jobId) {
        JsonNode job = job(jobId);
        if (!"RUNNING".equals(job.path("state").asText())) {
            return false;
        }
        for (JsonNode v : job.path("vertices")) {
            int parallelism = v.path("parallelism").asInt();
            if (v.path("tasks").path("RUNNING").asInt() != parallelism) {
                return false;
            }
        }
        return true;
    }
}
