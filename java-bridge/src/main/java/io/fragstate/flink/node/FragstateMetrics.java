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

    /** Groups that already carry the gauges (one set per TaskManager, weakly held). */
    private static final Set<MetricGroup> REGISTERED = Collections.newSetFromMap(new WeakHashMap<>());

    private static JsonNode cached;
    private static long cachedAt;

    private FragstateMetrics() {}

    /** The current counters; throws if the node cannot answer. */
    public static synchronized JsonNode stats() throws IOException {
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

    static long value(JsonNode stats, String path) {
        JsonNode n = stats;
        for (String part : path.split("\\.")) {
            n = n == null ? null : n.get(part);
        }
        return n == null || !n.isNumber() ? 0 : n.asLong();
    }

    private static long current(String path) {
        try {
            return value(stats(), path);
        } catch (IOException | RuntimeException e) {
            return -1;
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
    public static void register(MetricGroup parent) {
        synchronized (REGISTERED) {
            if (!REGISTERED.add(parent)) {
                return;
            }
        }
        MetricGroup g = parent.addGroup("fragstate");
        gauge(g, "liveNodes", "liveNodes");
        gauge(g, "fragmentsHeld", "fragmentsHeld");
        gauge(g, "bytesHeld", "bytesHeld");
        gauge(g, "manifestsHeld", "manifestsHeld");
        Gauge<Long> written = gauge(g, "bytesWritten", "client.bytesWritten");
        Gauge<Long> read = gauge(g, "bytesRead", "client.bytesRead");
        gauge(g, "objectsWritten", "client.objectsWritten");
        gauge(g, "objectsOpened", "client.objectsOpened");
        gauge(g, "bytesFetched", "client.bytesFetched");
        gauge(g, "cellsFetched", "client.cellsFetched");
        gauge(g, "peersFetchedFrom", "client.peersFetchedFrom");
        gauge(g, "stripesReconstructed", "client.stripesReconstructed");
        gauge(g, "corruptCells", "client.corruptCells");
        gauge(g, "failedRequests", "client.failedRequests");
        gauge(g, "fragmentsReplaced", "client.fragmentsReplaced");
        gauge(g, "fragmentsRepaired", "client.fragmentsRepaired");
        // cluster mode: what this node's repair loop sees (0 in embedded mode)
        gauge(g, "objectsDegraded", "network.objects_degraded");
        gauge(g, "bytesToRepair", "network.bytes_to_repair");
        gauge(g, "objectsRepaired", "network.objects_repaired");
        gauge(g, "repairFailures", "network.repair_failures");
        g.meter("bytesWrittenPerSecond", new MeterView(written));
        g.meter("bytesReadPerSecond", new MeterView(read));
    }

    private static Gauge<Long> gauge(MetricGroup g, String name, String path) {
        return g.gauge(name, () -> current(path));
    }
}
