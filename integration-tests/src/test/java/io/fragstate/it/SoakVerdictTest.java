package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The soak's growth windows compare a node's figures within one process. */
class SoakVerdictTest {
    private static final long GIB = 1L << 30;
    private static final SoakPlan PLAN =
            new SoakPlan(60, Duration.ofMinutes(10), Duration.ofMinutes(1), 0, 16, 4, Path.of("unused"));

    /** One sample a minute of {@code node}'s process {@code pid} over [from, to) with this RSS. */
    private static void sample(List<NodeSampler.NodeSample> out, String node, long pid, int from, int to, long rss) {
        for (int minute = from; minute < to; minute++) {
            out.add(new NodeSampler.NodeSample(minute, node, pid, rss, -1, -1, -1, -1, -1, -1, -1, -1, -1));
        }
    }

    private static SoakVerdict verdict(List<NodeSampler.NodeSample> samples) {
        SoakVerdict v = new SoakVerdict();
        v.compareWindows(PLAN, samples);
        return v;
    }

    @Test
    void aTaskManagerStartedAgainIsNotComparedWithItsPredecessor() {
        List<NodeSampler.NodeSample> samples = new ArrayList<>();
        sample(samples, "tm-1", 100, 0, 30, GIB); // killed at minute 30 ...
        sample(samples, "tm-1", 200, 30, 61, 6 * GIB / 5); // ... and its successor holds 20 % more
        sample(samples, "tm-2", 300, 0, 61, GIB); // flat through both windows
        sample(samples, "tm-3", 400, 0, 61, GIB);
        SoakVerdict v = verdict(samples);
        assertThat(v.passed()).as("%s", v.checks).isTrue();
        assertThat(v.windows).extracting(SoakVerdict.Window::node)
                .containsExactlyInAnyOrder("tm-2 (pid 300)", "tm-3 (pid 400)", "all nodes");
        assertThat(v.checks.get(0).detail()).contains("2 of 4 processes not alive in both windows");
    }

    @Test
    void fragmentFilesFillingTheirCacheAreJudgedByTheirBoundNotAsGrowth() {
        List<NodeSampler.NodeSample> samples = new ArrayList<>();
        for (int minute = 0; minute < 61; minute++) {
            long fragmentFds = minute < 50 ? 5 : 100; // the LRU of fragment files fills up
            samples.add(new NodeSampler.NodeSample(minute, "node-1", 9, GIB, 25 + fragmentFds, fragmentFds, 1024,
                    -1, -1, -1, -1, -1, -1));
        }
        SoakVerdict v = verdict(samples);
        assertThat(v.passed()).as("%s", v.windows).isTrue();
        assertThat(v.windows).extracting(SoakVerdict.Window::series).contains("other_fds").doesNotContain("fds");
    }

    @Test
    void aProcessThatGrowsFailsAndIsNamed() {
        List<NodeSampler.NodeSample> samples = new ArrayList<>();
        sample(samples, "jm", 7, 0, 61, GIB);
        samples.replaceAll(s -> s.minute() >= 50 ? new NodeSampler.NodeSample(s.minute(), s.node(), s.pid(),
                2 * GIB, -1, -1, -1, -1, -1, -1, -1, -1, -1) : s);
        SoakVerdict v = verdict(samples);
        assertThat(v.passed()).isFalse();
        assertThat(v.windows).filteredOn(w -> !w.passed()).extracting(SoakVerdict.Window::node)
                .containsExactlyInAnyOrder("jm (pid 7)", "all nodes");
    }

    /** Counted heap of {@code node}'s process over [from, to): {@code low}, or {@code burst} every {@code every} minutes. */
    private static void heap(List<NodeSampler.NodeSample> out, String node, int from, int to, long low, long burst,
            int every) {
        for (int minute = from; minute < to; minute++) {
            long heap = minute % every == 0 ? burst : low;
            out.add(new NodeSampler.NodeSample(minute, node, 5, -1, -1, -1, -1, -1, -1, -1, -1, -1, heap));
        }
    }

    @Test
    void moreUploadsCaughtInFlightAreNotGrowthButARisingLowIs() {
        long mb = 1L << 20;
        List<NodeSampler.NodeSample> bursty = new ArrayList<>();
        heap(bursty, "tm-1", 0, 50, 33 * mb, 130 * mb, 5); // a checkpoint upload caught every 5th sample ...
        heap(bursty, "tm-1", 50, 61, 33 * mb, 130 * mb, 2); // ... then every 2nd: the mean rises 50 %
        SoakVerdict v = verdict(bursty);
        assertThat(v.passed()).as("%s", v.windows).isTrue();

        List<NodeSampler.NodeSample> leaking = new ArrayList<>();
        heap(leaking, "tm-1", 0, 50, 33 * mb, 130 * mb, 5);
        heap(leaking, "tm-1", 50, 61, 53 * mb, 130 * mb, 5); // what stays between uploads grew by 20 MB
        v = verdict(leaking);
        assertThat(v.passed()).isFalse();
        assertThat(v.windows).filteredOn(w -> !w.passed()).extracting(SoakVerdict.Window::series)
                .containsOnly("heap_bytes");
    }

    @Test
    void theSumOverNodesIsAllowedEveryNodesFloor() {
        // Eight processes whose heap steps from 25 to 29 MB (each a bounded set filling, under its
        // own 16 MiB floor): the sum steps by 16 %, within eight floors.
        long mb = 1L << 20;
        List<NodeSampler.NodeSample> samples = new ArrayList<>();
        for (int n = 0; n < 8; n++) {
            heap(samples, "node-" + n, 0, 15, 25 * mb, 25 * mb, 1);
            heap(samples, "node-" + n, 15, 61, 29 * mb, 29 * mb, 1);
        }
        samples.replaceAll(s -> new NodeSampler.NodeSample(s.minute(), s.node(), s.node().hashCode(), -1, -1, -1, -1,
                -1, -1, -1, -1, -1, s.heapBytes()));
        SoakVerdict v = verdict(samples);
        assertThat(v.passed()).as("%s", v.windows).isTrue();
        assertThat(v.windows).extracting(SoakVerdict.Window::node).contains("all nodes");
    }
}
