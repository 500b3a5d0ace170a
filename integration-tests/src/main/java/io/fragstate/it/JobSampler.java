package io.fragstate.it;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;

/**
 * The job's side of a soak sample, from the JobManager's REST API: the end-to-end durations of the
 * checkpoints completed since the last sample (collected from {@code /jobs/<id>/checkpoints}'s
 * history, which holds only the newest {@code web.checkpoints.history} entries, so {@link
 * #poll} runs every few seconds), failed checkpoints, and the job's input rate: the sum over the
 * subtasks of {@code poi-filter}, the first operator after the source, of Flink's {@code
 * numRecordsInPerSecond} (a 60 s moving rate).
 */
final class JobSampler {
    /** The job at one sample: checkpoints since the previous sample. */
    record JobSample(double minute, int checkpointsCompleted, long checkpointsFailedTotal, long p50Ms, long p99Ms,
            long maxMs, double recordsPerSecond, long objectsDeletedTotal) {

        static final String CSV_HEADER = "minute,checkpoints_completed,checkpoints_failed_total,checkpoint_p50_ms,"
                + "checkpoint_p99_ms,checkpoint_max_ms,records_per_second,objects_deleted_total";

        String csv() {
            return String.format(Locale.ROOT, "%.2f,%d,%d,%d,%d,%d,%.1f,%d", minute, checkpointsCompleted,
                    checkpointsFailedTotal, p50Ms, p99Ms, maxMs, recordsPerSecond, objectsDeletedTotal);
        }
    }

    private final FlinkRest rest;
    private final String jobId;
    /** Completed checkpoint id -> end-to-end duration, not yet reported in a sample. */
    private final TreeMap<Long, Long> pending = new TreeMap<>();
    private final List<Long> allDurations = new ArrayList<>();
    private long lastSeenId = -1;
    private long failedTotal;
    private long checkpointedBytes;

    JobSampler(FlinkRest rest, String jobId) {
        this.rest = rest;
        this.jobId = jobId;
    }

    /** Collects the checkpoints completed since the last poll (REST errors during a failover are skipped). */
    void poll() {
        try {
            JsonNode cps = rest.checkpoints(jobId);
            failedTotal = cps.path("counts").path("failed").asLong();
            long newest = lastSeenId;
            for (JsonNode h : cps.path("history")) {
                long id = h.path("id").asLong();
                if (id > lastSeenId && "COMPLETED".equals(h.path("status").asText())) {
                    pending.put(id, h.path("end_to_end_duration").asLong());
                    checkpointedBytes += h.path("checkpointed_size").asLong();
                    newest = Math.max(newest, id);
                }
            }
            lastSeenId = newest;
        } catch (IllegalStateException e) {
            // REST briefly unavailable
        }
    }

    /** The sample at {@code minute}: the checkpoints collected since the previous one. */
    JobSample sample(double minute, long objectsDeletedTotal) {
        poll();
        List<Long> d = new ArrayList<>(pending.values());
        pending.clear();
        allDurations.addAll(d);
        Collections.sort(d);
        return new JobSample(minute, d.size(), failedTotal, percentile(d, 50), percentile(d, 99),
                d.isEmpty() ? -1 : d.get(d.size() - 1), inputRate(), objectsDeletedTotal);
    }

    /** Every checkpoint duration seen in the run, sorted. */
    List<Long> allDurations() {
        List<Long> d = new ArrayList<>(allDurations);
        Collections.sort(d);
        return d;
    }

    /** Bytes the checkpoints seen so far wrote ({@code checkpointed_size}: the increment of an incremental checkpoint). */
    long checkpointedBytes() {
        return checkpointedBytes;
    }

    /** Failed checkpoints of the job so far. */
    long failedTotal() {
        return failedTotal;
    }

    /** Nearest-rank percentile of sorted values; -1 for none. */
    static long percentile(List<Long> sorted, int p) {
        if (sorted.isEmpty()) {
            return -1;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.size());
        return sorted.get(Math.max(0, rank - 1));
    }

    private double inputRate() {
        try {
            String vid = rest.vertexId(jobId, "poi-filter");
            JsonNode m = rest.get("/jobs/" + jobId + "/vertices/" + vid + "/subtasks/metrics?get=numRecordsInPerSecond&agg=sum");
            return m.size() == 0 ? -1 : m.get(0).path("sum").asDouble(-1);
        } catch (IllegalStateException e) {
            return -1;
        }
    }
}
