/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.node;

import io.fragstate.flink.jni.FragstateNative;

import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MeterView;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.groups.TaskManagerJobMetricGroup;
import org.apache.flink.runtime.metrics.groups.TaskMetricGroup;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * The node's counters ({@link FragstateNative#nodeStats}) as Flink metrics in a {@code fragstate}
 * group of the TaskManager, so they show in the REST API ({@code
 * /taskmanagers/<id>/metrics?get=fragstate.bytesHeld}) and in every reporter. The JSON is
 * fetched at most once a second however many gauges a reporter reads.
 */
public final class FragstateMetrics {

    private static final Logger LOG = LoggerFactory.getLogger(FragstateMetrics.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long MAX_AGE_NANOS = 1_000_000_000L;

    /**
     * Gauge name → JSON pointer of its counter in {@link FragstateNative#nodeStats}. The {@code
     * network} counters are this node's repair loop in cluster mode (0 in embedded mode); the
     * {@code scrub} counters are this process's background scrub (its network node, or every node
     * of its embedded mesh summed).
     */
    static final Map<String, String> COUNTERS =
            Map.ofEntries(
                    Map.entry("liveNodes", "/liveNodes"),
                    Map.entry("fragmentsHeld", "/fragmentsHeld"),
                    Map.entry("bytesHeld", "/bytesHeld"),
                    Map.entry("manifestsHeld", "/manifestsHeld"),
                    Map.entry("heapBytes", "/heapBytes"),
                    Map.entry("bytesWritten", "/client/bytesWritten"),
                    Map.entry("bytesRead", "/client/bytesRead"),
                    Map.entry("objectsWritten", "/client/objectsWritten"),
                    Map.entry("objectsOpened", "/client/objectsOpened"),
                    Map.entry("bytesFetched", "/client/bytesFetched"),
                    Map.entry("cellsFetched", "/client/cellsFetched"),
                    Map.entry("peersFetchedFrom", "/client/peersFetchedFrom"),
                    Map.entry("stripesReconstructed", "/client/stripesReconstructed"),
                    Map.entry("corruptCells", "/client/corruptCells"),
                    Map.entry("failedRequests", "/client/failedRequests"),
                    Map.entry("fragmentsReplaced", "/client/fragmentsReplaced"),
                    Map.entry("fragmentsRepaired", "/client/fragmentsRepaired"),
                    Map.entry("placementFailures", "/client/placementFailures"),
                    Map.entry("writesSuperseded", "/client/writesSuperseded"),
                    Map.entry("objectsDegraded", "/network/objectsDegraded"),
                    Map.entry("bytesToRepair", "/network/bytesToRepair"),
                    Map.entry("objectsRepaired", "/network/objectsRepaired"),
                    Map.entry("repairFailures", "/network/repairFailures"),
                    Map.entry("holderCheckPasses", "/network/holderCheckPasses"),
                    Map.entry("staleCopiesDropped", "/network/staleCopiesDropped"),
                    Map.entry("fragmentsRebalanced", "/network/fragmentsRebalanced"),
                    Map.entry("bytesRebalanced", "/network/bytesRebalanced"),
                    Map.entry("rebalanceFailures", "/network/rebalanceFailures"),
                    Map.entry("corruptCellsReported", "/client/corruptCellsReported"),
                    Map.entry("scrubPasses", "/scrub/passes"),
                    Map.entry("scrubCells", "/scrub/cellsScrubbed"),
                    Map.entry("scrubBytes", "/scrub/bytesScrubbed"),
                    Map.entry("scrubCorruptFound", "/scrub/corruptFound"),
                    Map.entry("corruptReportsReceived", "/scrub/corruptReports"),
                    Map.entry("corruptReportsConfirmed", "/scrub/corruptReportsConfirmed"),
                    Map.entry("cellsRebuilt", "/scrub/cellsRebuilt"),
                    Map.entry("cellRebuildFailures", "/scrub/rebuildFailures"),
                    Map.entry("holdersMovedToParity", "/client/holdersMovedToParity"),
                    Map.entry("adaptivePhase", "/client/adaptive/phase"),
                    Map.entry("adaptivePhasesChanged", "/client/adaptive/phasesChanged"),
                    Map.entry("adaptiveDataFragments", "/client/adaptive/dataFragments"),
                    Map.entry("adaptiveParityFragments", "/client/adaptive/parityFragments"),
                    Map.entry("adaptiveCellSize", "/client/adaptive/cellSize"),
                    Map.entry("adaptiveZstdLevel", "/client/adaptive/zstdLevel"),
                    Map.entry("adaptivePredictedRestoreMs", "/client/adaptive/predictedRestoreMs"),
                    Map.entry("adaptiveConfiguredRestoreMs", "/client/adaptive/configuredRestoreMs"),
                    Map.entry("adaptiveMeasuredNodes", "/client/adaptive/measuredNodes"),
                    Map.entry("adaptiveCodecBytesPerS", "/client/adaptive/codecBytesPerS"),
                    Map.entry("speedProbes", "/client/speedProbes"),
                    Map.entry("manifestLookups", "/client/manifestLookups"),
                    Map.entry("manifestRequests", "/client/manifestRequests"),
                    Map.entry("manifestLookupsByPath", "/client/manifestLookupsByPath"),
                    Map.entry("indexReads", "/client/indexReads"),
                    Map.entry("indexReadsSettled", "/client/indexReadsSettled"),
                    Map.entry("indexRequests", "/client/indexRequests"),
                    Map.entry("indexRebuilds", "/client/indexRebuilds"),
                    Map.entry("indexRecords", "/network/indexRecords"),
                    Map.entry("indexBytes", "/network/indexBytes"),
                    Map.entry("indexDropped", "/network/indexDropped"));

    /** Groups that already carry the gauges (one set per TaskManager, weakly held). */
    private static final Set<MetricGroup> REGISTERED = Collections.newSetFromMap(new WeakHashMap<>());

    private static JsonNode cached;
    private static long cachedAt;

    private FragstateMetrics() {}

    /** The current counters; throws if the node cannot answer. */
    private static synchronized JsonNode stats() throws IOException {
        long now = System.nanoTime();
        if (cached == null || now - cachedAt > MAX_AGE_NANOS) {
            cached = JSON.readTree(FragstateNode.stats());
            cachedAt = now;
        }
        return cached;
    }

    /** Fresh counters, bypassing the cache (tests, benchmarks). */
    public static synchronized JsonNode freshStats() throws IOException {
        cached = null;
        return stats();
    }

    /**
     * The counter at {@code pointer} (a JSON pointer such as {@code /client/bytesWritten}); 0 when
     * the node does not report it (the {@code network} counters in embedded mode), -1 when the
     * node cannot answer.
     */
    private static long current(String pointer) {
        try {
            JsonNode n = stats().at(pointer);
            return n.isNumber() ? n.asLong() : 0;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Gauge of what this node's transfers measured of each peer, as a JSON array. */
    static final String PEER_ESTIMATES = "peerEstimates";

    /**
     * The per-peer estimates ({@code /client/peers}: node, bytesPerS, samples, ageMs, trusted) as
     * a JSON array; an empty string when the node cannot answer.
     */
    private static String peerEstimates() {
        try {
            JsonNode n = stats().at("/client/peers");
            return n.isArray() ? n.toString() : "[]";
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    /**
     * Registers the gauges on the TaskManager group above a task's metric group (once per
     * TaskManager); falls back to {@code group} itself when it is not a task group.
     */
    public static void registerFor(MetricGroup taskGroup) {
        try {
            MetricGroup target = taskGroup;
            if (taskGroup instanceof TaskMetricGroup) {
                TaskManagerJobMetricGroup job = ((TaskMetricGroup) taskGroup).parent();
                target = job.parent();
            }
            register(target);
        } catch (RuntimeException e) {
            LOG.warn("fragstate metrics could not be registered", e);
        }
    }

    /** Adds the {@code fragstate} group with every gauge to {@code parent} unless already there. */
    static void register(MetricGroup parent) {
        synchronized (REGISTERED) {
            if (!REGISTERED.add(parent)) {
                return;
            }
        }
        MetricGroup g = parent.addGroup("fragstate");
        Map<String, Gauge<Long>> gauges = new HashMap<>();
        COUNTERS.forEach((name, pointer) -> gauges.put(name, g.gauge(name, () -> current(pointer))));
        g.gauge(PEER_ESTIMATES, FragstateMetrics::peerEstimates);
        g.meter("bytesWrittenPerSecond", new MeterView(gauges.get("bytesWritten")));
        g.meter("bytesReadPerSecond", new MeterView(gauges.get("bytesRead")));
    }
}
