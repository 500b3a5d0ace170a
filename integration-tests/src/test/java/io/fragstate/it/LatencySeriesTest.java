package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.function.LongUnaryOperator;
import org.junit.jupiter.api.Test;

class LatencySeriesTest {
    private static final long START = 1_000_000;
    /** Window W (ms since START, as event time) closable at START + W: event time and wall time run together. */
    private static final LongUnaryOperator CLOSABLE = w -> w;

    private static TreeSet<Long> windowsEvery10s(int seconds) {
        TreeSet<Long> ends = new TreeSet<>();
        for (long w = START + 10_000; w <= START + seconds * 1000L + 100_000; w += 10_000) {
            ends.add(w);
        }
        return ends;
    }

    /** Every window's notifications seen {@code delayMs} after it closed, except those closing in {@code [downFrom, downTo)} s, seen at downTo. */
    private static List<LatencySeries.Sample> samples(int seconds, long delayMs, int downFrom, int downTo) {
        List<LatencySeries.Sample> out = new ArrayList<>();
        for (long w = START + 10_000; w < START + seconds * 1000L; w += 10_000) {
            long seen = w + delayMs;
            long rel = (w - START) / 1000;
            if (rel >= downFrom && rel < downTo) {
                seen = START + downTo * 1000L + delayMs;
            }
            out.add(new LatencySeries.Sample(seen, w));
            out.add(new LatencySeries.Sample(seen, w));
        }
        return out;
    }

    @Test
    void steadyOutputHasItsDelayAsLatencyInTheSecondsItArrivesAndNoStaleness() {
        var series = LatencySeries.perSecond(samples(100, 300, -1, -1), windowsEvery10s(100), CLOSABLE, START, 100);
        assertThat(series).hasSize(100);
        assertThat(series.get(10).records()).isEqualTo(2);
        assertThat(series.get(10).meanMs()).isEqualTo(300.0);
        assertThat(series.stream().mapToDouble(LatencySeries.Second::stalenessMs).max().getAsDouble()).isLessThanOrEqualTo(1000.0);
        assertThat(LatencySeries.secondsAbove(series, 1000, 0, 100)).isZero();
    }

    @Test
    void secondsWithoutOutputWhileTheJobIsDownCountWithTheirStaleness() {
        // windows closing at 40..70 s arrive only at 75 s: the job was down
        var series = LatencySeries.perSecond(samples(120, 300, 40, 75), windowsEvery10s(120), CLOSABLE, START, 120);
        assertThat(series.get(50).records()).isZero();
        assertThat(series.get(50).latencyMs()).isEqualTo(11_000.0); // window 40 closed 11 s before the end of second 50
        assertThat(series.get(75).meanMs()).isGreaterThan(5_000);
        assertThat(LatencySeries.secondsAbove(series, 1000, 0, 120)).isBetween(30, 40);
    }

    @Test
    void recoveryEndsWhenLatencyIsBackAtTheSteadyLevelForTenSeconds() {
        var series = LatencySeries.perSecond(samples(200, 300, 100, 130), windowsEvery10s(200), CLOSABLE, START, 200);
        LatencySeries.Recovery r = LatencySeries.recovery(series, 98.5, 98.5, 200);
        assertThat(r.recovered()).isTrue();
        assertThat(r.steadyMs()).isLessThan(1000.0);
        // output is back at 130 s, the last late window's latency lands in second 130: steady from 131
        assertThat(r.recoveryS()).isBetween(31.0, 34.0);
        assertThat(LatencySeries.recovery(series, 98.5, 98.5, 125).recovered()).isFalse();
        // not recovered before every subtask runs again, whatever the latency showed
        assertThat(LatencySeries.recovery(series, 98.5, 150.2, 200).recoveryS()).isEqualTo(151 - 98.5);
    }

    @Test
    void killMomentsAreSeededSortedSpacedAndInRange() {
        List<Integer> a = LatencySeries.killSeconds(7, 3, 90, 450, 90);
        assertThat(a).isEqualTo(LatencySeries.killSeconds(7, 3, 90, 450, 90)).hasSize(3).isSorted();
        assertThat(a).allMatch(s -> s >= 90 && s <= 450);
        assertThat(a.get(1) - a.get(0)).isGreaterThanOrEqualTo(90);
        assertThat(a.get(2) - a.get(1)).isGreaterThanOrEqualTo(90);
        assertThat(LatencySeries.killSeconds(8, 3, 90, 450, 90)).isNotEqualTo(a);
        assertThat(LatencySeries.killSeconds(1, 3, 0, 180, 90)).containsExactly(0, 90, 180);
        assertThatThrownBy(() -> LatencySeries.killSeconds(1, 4, 0, 180, 90)).hasMessageContaining("do not fit");
    }

    @Test
    void tightlyPackedKillsStillDependOnTheSeed() {
        // 8 kills 90 s apart between 90 and 810 s leave 90 s of freedom; the seed still moves them
        List<Integer> a = LatencySeries.killSeconds(42, 8, 90, 810, 90);
        List<Integer> b = LatencySeries.killSeconds(7, 8, 90, 810, 90);
        assertThat(a).isNotEqualTo(b);
        for (List<Integer> kills : List.of(a, b)) {
            assertThat(kills).hasSize(8).isSorted().allMatch(s -> s >= 90 && s <= 810);
            for (int i = 1; i < kills.size(); i++) {
                assertThat(kills.get(i) - kills.get(i - 1)).isGreaterThanOrEqualTo(90);
            }
        }
        // over many seeds the kills' offsets from the tightest packing cover the whole freedom
        java.util.IntSummaryStatistics offsets = java.util.stream.LongStream.range(0, 200)
                .flatMap(seed -> {
                    List<Integer> k = LatencySeries.killSeconds(seed, 8, 90, 810, 90);
                    return java.util.stream.IntStream.range(0, 8).mapToLong(i -> k.get(i) - 90 - i * 90L);
                })
                .mapToInt(x -> (int) x).summaryStatistics();
        assertThat(offsets.getMin()).isBetween(0, 5);
        assertThat(offsets.getMax()).isBetween(85, 90);
    }
}
