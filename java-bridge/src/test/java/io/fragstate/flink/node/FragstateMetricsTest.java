/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.node;

import io.fragstate.flink.ClusterKeys;
import io.fragstate.flink.config.FragstateSettings;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Meter;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** The node's counters appear as gauges of a {@code fragstate} group and move with the I/O. */
class FragstateMetricsTest {

    /** Records every metric under its dotted name, and how many groups were added. */
    static final class Capturing extends UnregisteredMetricsGroup {
        final Map<String, Metric> metrics;
        final String prefix;
        final AtomicInteger groupsAdded;

        Capturing(Map<String, Metric> metrics, String prefix, AtomicInteger groupsAdded) {
            this.metrics = metrics;
            this.prefix = prefix;
            this.groupsAdded = groupsAdded;
        }

        @Override
        public <T, G extends Gauge<T>> G gauge(String name, G gauge) {
            metrics.put(prefix + name, gauge);
            return gauge;
        }

        @Override
        public <M extends Meter> M meter(String name, M meter) {
            metrics.put(prefix + name, meter);
            return meter;
        }

        @Override
        public MetricGroup addGroup(String name) {
            groupsAdded.incrementAndGet();
            return new Capturing(metrics, prefix + name + ".", groupsAdded);
        }
    }

    @SuppressWarnings("unchecked")
    private static long gauge(Map<String, Metric> m, String name) {
        return ((Gauge<Long>) m.get(name)).getValue();
    }

    @Test
    void gaugesFollowTheNode() throws Exception {
        Map<String, Metric> m = new ConcurrentHashMap<>();
        AtomicInteger groups = new AtomicInteger();
        Capturing tm = new Capturing(m, "", groups);
        FragstateMetrics.register(tm);
        FragstateMetrics.register(tm);
        assertThat(groups).as("the fragstate group is added once per parent group").hasValue(1);
        assertThat(m.keySet())
                .contains(
                        "fragstate.liveNodes",
                        "fragstate.fragmentsHeld",
                        "fragstate.bytesHeld",
                        "fragstate.heapBytes",
                        "fragstate.bytesWritten",
                        "fragstate.bytesRead",
                        "fragstate.stripesReconstructed",
                        "fragstate.bytesWrittenPerSecond",
                        "fragstate.bytesReadPerSecond",
                        "fragstate.objectsDegraded",
                        "fragstate.bytesToRepair",
                        "fragstate.scrubCells",
                        "fragstate.scrubCorruptFound",
                        "fragstate.cellsRebuilt",
                        "fragstate.corruptReportsReceived");
        // the embedded mesh's scrubbers report their counters (a number, not an error)
        assertThat(gauge(m, "fragstate.cellsRebuilt")).isGreaterThanOrEqualTo(0);
        assertThat(gauge(m, "fragstate.scrubCells")).isGreaterThanOrEqualTo(0);
        // an embedded mesh has no repair loop: the network gauges read 0, not an error (-1)
        assertThat(gauge(m, "fragstate.objectsDegraded")).isZero();
        assertThat(gauge(m, "fragstate.bytesToRepair")).isZero();

        FragstateMetrics.freshStats();
        long written = gauge(m, "fragstate.bytesWritten");
        long held = gauge(m, "fragstate.bytesHeld");
        long heap = gauge(m, "fragstate.heapBytes");
        Path p = new Path("fragstate://metrics/" + UUID.randomUUID());
        try (FSDataOutputStream out = p.getFileSystem().create(p, FileSystem.WriteMode.NO_OVERWRITE)) {
            out.write(new byte[3 * 1024 * 1024]);
        }
        FragstateMetrics.freshStats();
        assertThat(gauge(m, "fragstate.liveNodes")).isEqualTo(6);
        assertThat(gauge(m, "fragstate.bytesWritten") - written).isEqualTo(3 * 1024 * 1024);
        // k = 4, m = 2: 1.5 × the data, plus headers
        assertThat(gauge(m, "fragstate.bytesHeld") - held).isGreaterThanOrEqualTo(3 * 1024 * 1024 * 3 / 2);
        assertThat(gauge(m, "fragstate.fragmentsHeld")).isPositive();
        // the embedded mesh keeps its fragments in memory: on fragstate's own (counted) heap
        assertThat(gauge(m, "fragstate.heapBytes") - heap).isGreaterThanOrEqualTo(3 * 1024 * 1024 * 3 / 2);
        // reading it back measures the holders: the per-peer estimates gauge lists them
        try (FSDataInputStream in = p.getFileSystem().open(p)) {
            in.readAllBytes();
        }
        FragstateMetrics.freshStats();
        @SuppressWarnings("unchecked")
        String peers = ((Gauge<String>) m.get("fragstate." + FragstateMetrics.PEER_ESTIMATES)).getValue();
        JsonNode estimates = new ObjectMapper().readTree(peers);
        assertThat(estimates.isArray() && estimates.size() >= 4).as(peers).isTrue();
        assertThat(estimates.get(0).get("bytesPerS").asLong()).as(peers).isPositive();
        p.getFileSystem().delete(p, false);
    }

    /**
     * Every gauge reads a counter the node really reports: in cluster mode (where {@code network}
     * is filled) no pointer may miss, or its gauge would read 0 forever.
     */
    @Test
    void everyCounterExistsInClusterMode(@TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path key = ClusterKeys.write(dir);
        Configuration c = new Configuration();
        c.setString("fragstate.mode", "cluster");
        c.setString("fragstate.cluster-key-file", key.toString());
        c.setString("fragstate.listen", "/ip4/127.0.0.1/tcp/0");
        c.setString("fragstate.bootstrap", "/ip4/127.0.0.1/tcp/1"); // nobody there: a lone node
        FragstateNode.stop();
        try {
            FragstateNode.configure(FragstateSettings.fromConfig(c));
            JsonNode stats = FragstateMetrics.freshStats();
            assertThat(stats.get("network").isObject()).as("network counters in %s", stats).isTrue();
            FragstateMetrics.COUNTERS.forEach(
                    (name, pointer) -> assertThat(stats.at(pointer).isNumber()).as("%s at %s in %s", name, pointer, stats).isTrue());
        } finally {
            FragstateNode.stop();
            FragstateNode.configure(FragstateSettings.fromConfig(null));
        }
    }
}
