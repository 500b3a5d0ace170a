/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.node;

import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Meter;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/** The node's counters appear as gauges of a {@code fragstate} group and move with the I/O. */
class FragstateMetricsTest {

    /** Records every metric under its dotted name. */
    static final class Capturing extends UnregisteredMetricsGroup {
        final Map<String, Metric> metrics;
        final String prefix;

        Capturing(Map<String, Metric> metrics, String prefix) {
            this.metrics = metrics;
            this.prefix = prefix;
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
            return new Capturing(metrics, prefix + name + ".");
        }
    }

    @SuppressWarnings("unchecked")
    private static long gauge(Map<String, Metric> m, String name) {
        return ((Gauge<Long>) m.get(name)).getValue();
    }

    @Test
    void gaugesFollowTheNode() throws Exception {
        Map<String, Metric> m = new ConcurrentHashMap<>();
        Capturing tm = new Capturing(m, "");
        FragstateMetrics.register(tm);
        FragstateMetrics.register(tm); // once per group
        assertThat(m.keySet())
                .contains(
                        "fragstate.liveNodes",
                        "fragstate.fragmentsHeld",
                        "fragstate.bytesHeld",
                        "fragstate.bytesWritten",
                        "fragstate.bytesRead",
                        "fragstate.stripesReconstructed",
                        "fragstate.bytesWrittenPerSecond",
                        "fragstate.bytesReadPerSecond",
                        "fragstate.objectsDegraded",
                        "fragstate.bytesToRepair");
        // an embedded mesh has no repair loop: the network gauges read 0, not an error (-1)
        assertThat(gauge(m, "fragstate.objectsDegraded")).isZero();
        assertThat(gauge(m, "fragstate.bytesToRepair")).isZero();

        FragstateMetrics.freshStats();
        long written = gauge(m, "fragstate.bytesWritten");
        long held = gauge(m, "fragstate.bytesHeld");
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
        p.getFileSystem().delete(p, false);
    }
}
