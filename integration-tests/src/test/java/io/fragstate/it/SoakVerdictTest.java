package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The soak's growth windows compare a node's figures within one process. */
class SoakVerdictTest {
    private static final long GIB = 1L << 30;
    private static final SoakPlan PLAN =
            new SoakPlan(60, Duration.ofMinutes(10), Duration.ofMinutes(1), 0, 16, 4, 2, Path.of("unused"));

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
        assertThat(v.checks.get(0).detail()).contains("2 of 4 processes not up from before the baseline to the end");
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
        assertFailsOnHeapAlone(leaking);
    }

    /** The verdict of {@code samples} fails, and only on the heap's growth. */
    private static void assertFailsOnHeapAlone(List<NodeSampler.NodeSample> samples) {
        SoakVerdict v = verdict(samples);
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

    /** Tombstones of {@code node} filling linearly to 60,000 by minute {@code fullAt}, then flat; heap follows them. */
    private static void filling(List<NodeSampler.NodeSample> out, String node, int fullAt, long heapGrowthAfter) {
        long mb = 1L << 20;
        for (int minute = 0; minute < 61; minute++) {
            long tombstones = 60_000L * Math.min(minute, fullAt) / fullAt;
            long heap = 10 * mb + tombstones * 500 + (minute > fullAt ? heapGrowthAfter * (minute - fullAt) : 0);
            out.add(new NodeSampler.NodeSample(minute, node, 3, -1, -1, -1, -1, tombstones, -1, -1, -1, -1, heap));
        }
    }

    @Test
    void theBaselineStartsWhenTheTombstoneSetsAreFull() {
        List<NodeSampler.NodeSample> samples = new ArrayList<>();
        filling(samples, "tm-1", 24, 0); // a slow run: the sets fill at minute 24 (30 MB of heap with them)
        SoakVerdict v = verdict(samples);
        assertThat(v.baselineFrom).isEqualTo(24);
        assertThat(v.passed()).as("%s", v.windows).isTrue();
        assertThat(v.checks.get(0).detail()).startsWith("baseline minutes 24.0-34.0 (the tombstone sets were full then)");

        assertThat(v.windows).filteredOn(w -> w.series().equals("heap_bytes")).extracting(SoakVerdict.Window::baseline)
                .as("the baseline holds the full sets' heap").containsOnly((double) (10L << 20) + 60_000 * 500);

        List<NodeSampler.NodeSample> leaking = new ArrayList<>();
        filling(leaking, "tm-1", 24, 1L << 20); // after warm-up the heap still grows by 1 MiB a minute
        assertFailsOnHeapAlone(leaking);
    }

    @Test
    void aRunTooShortToCompareAfterWarmUpFailsAndSaysHowLongItNeeds() {
        List<NodeSampler.NodeSample> samples = new ArrayList<>();
        filling(samples, "tm-1", 45, 0);
        SoakVerdict v = verdict(samples);
        assertThat(v.passed()).isFalse();
        assertThat(v.windows).isEmpty();
        assertThat(v.checks.get(0).detail()).contains("full at minute 45.0").contains("at least 65 minutes");
    }

    /** The committed samples of the soak run in {@code dir} under integration-tests/soak/results. */
    private static List<NodeSampler.NodeSample> committedRun(String dir) throws IOException {
        List<String> lines = Files.readAllLines(Path.of("soak", "results", dir, "nodes.csv"));
        assertThat(lines.get(0)).isEqualTo(NodeSampler.NodeSample.CSV_HEADER);
        return lines.stream().skip(1).map(NodeSampler.NodeSample::parse).toList();
    }

    @Test
    void theCommittedRunsStillJudgeTheJobManagersHeapGrowthAsBefore() throws IOException {
        // 90 minutes with the JobManager's heap growth (fixed in commit 7255e34): still caught.
        SoakVerdict before = new SoakVerdict();
        before.compareWindows(new SoakPlan(90, Duration.ofMinutes(10), Duration.ofMinutes(1), 0, 16, 4, 2,
                Path.of("unused")), committedRun("2026-12-05-90min-swim-rebalancing"));
        assertThat(before.windows).filteredOn(w -> !w.passed())
                .extracting(w -> w.node().replaceAll(" \\(pid \\d+\\)", "") + " " + w.series())
                .contains("jobmanager heap_bytes");

        // 60 minutes after the fix, at a slower delete rate: flat once the tombstone sets were full.
        SoakVerdict after = new SoakVerdict();
        after.compareWindows(PLAN, committedRun("2026-12-06-60min-swim-heap-fix"));
        assertThat(after.baselineFrom).isBetween(20.0, 26.0);
        assertThat(after.passed()).as("%s", after.windows).isTrue();
    }
}
