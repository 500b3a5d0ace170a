package io.fragstate.it;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The fragstate figures of a cluster-mode run, taken right after the recovery: the {@code
 * fragstate.*} metrics of every TaskManager (bytes and stripes fetched for restores, live peers)
 * and {@code fragstate stats} of every storage node (fragments and bytes held, repairs).
 */
final class FragstateFigures {
    private static final String METRICS = String.join(",", List.of("fragstate.liveNodes", "fragstate.bytesWritten",
            "fragstate.objectsWritten", "fragstate.bytesRead", "fragstate.objectsOpened", "fragstate.bytesFetched",
            "fragstate.stripesReconstructed", "fragstate.failedRequests", "fragstate.fragmentsReplaced",
            "fragstate.fragmentsHeld", "fragstate.bytesHeld", "fragstate.objectsDegraded", "fragstate.bytesToRepair",
            "fragstate.cellsFetched", "fragstate.peersFetchedFrom", "fragstate.adaptivePhase",
            "fragstate.adaptiveMeasuredNodes", "fragstate.holdersMovedToParity"));

    private FragstateFigures() {}

    /** Puts {@code taskManagerMetrics} and (with standalone nodes) {@code nodeStats} into {@code into}. */
    static void collect(ServiceStack stack, Map<String, Object> into) {
        into.put("taskManagerMetrics", taskManagerMetrics(stack.rest()));
        if (stack.fragstateNodesStarted()) {
            try {
                into.put("nodeStats", List.of(stack.fragstateStats().strip().split("\\R")));
            } catch (RuntimeException e) {
                into.put("nodeStats", "failed: " + e.getMessage());
            }
        }
        Report.step("fragstate figures: " + into);
    }

    /**
     * Per TaskManager its {@code fragstate.*} metrics (names without the prefix). Right after
     * recovery (and after the first checkpoint that followed it). The TaskManager gauges are cached
     * for 1 s and the REST metric cache is refreshed every metrics.fetcher.update-interval, so poll
     * (at most 20 s) until the restore's fetches and that checkpoint's writes show up; TaskManagers
     * restarted with the cluster (d) start at 0.
     */
    static Map<String, Object> taskManagerMetrics(FlinkRest rest) {
        Map<String, Object> perTm = new TreeMap<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        try {
            long fetched = 0;
            long written = 0;
            while ((fetched == 0 || written == 0) && System.nanoTime() < deadline) {
                perTm.clear();
                fetched = 0;
                written = 0;
                for (String tm : rest.registeredTaskManagers()) {
                    Map<String, Long> m = new TreeMap<>();
                    for (JsonNode g : rest.get("/taskmanagers/" + tm + "/metrics?get=" + METRICS)) {
                        m.put(g.path("id").asText().replace("fragstate.", ""), g.path("value").asLong());
                    }
                    perTm.put(tm, m);
                    fetched += m.getOrDefault("bytesFetched", 0L);
                    written += m.getOrDefault("bytesWritten", 0L);
                }
                if (fetched == 0 || written == 0) {
                    Thread.sleep(1000);
                }
            }
        } catch (RuntimeException e) {
            perTm.put("error", e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            perTm.put("error", "interrupted");
        }
        return perTm;
    }
}
