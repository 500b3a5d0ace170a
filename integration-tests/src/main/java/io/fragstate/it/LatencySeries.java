package io.fragstate.it;

import java.util.ArrayList;
import java.util.List;
import java.util.NavigableSet;
import java.util.Random;
import java.util.function.LongUnaryOperator;

/**
 * The latency and recovery figures of a checkpoint-interval evaluation run (issue 15), computed
 * from what was measured; no I/O, so every definition here is unit-tested.
 *
 * <p><b>Latency</b> of a notification: when the harness's consumer first saw it (read_uncommitted,
 * so the figure is the job's processing delay, not the checkpoint interval that an exactly-once
 * sink adds before a commit) minus the moment its window could first fire — when the generator had
 * sent the simulated second whose events carry the watermark past the window's end (2 s bounded
 * out-of-orderness; {@link GeneratorClock#closableAtMs}). <b>Per second</b> of the run, the
 * latency is the larger of the mean of the notifications seen in that second and the
 * <i>staleness</i>: how long the next window that has output in the reference computation has
 * been closable without any of its notifications seen. So a second in which nothing arrives
 * because the job is down counts with the delay it really has, not as a gap.
 *
 * <p><b>Recovery time</b> of a kill: from the kill to the start of the first run of {@link
 * #RECOVERED_FOR_S} seconds whose latency is back at the steady level (at most {@code max(2 x,
 * + 250 ms)} the median of the {@link #STEADY_BEFORE_S} seconds before the kill). Khaos measures it
 * the same way: failure to latency back to normal.
 */
final class LatencySeries {
    /** The job's tumbling windows (10 s). */
    static final long WINDOW_MS = 10_000;
    /** Seconds in a row with steady latency that end a recovery. */
    static final int RECOVERED_FOR_S = 10;
    /** Seconds before a kill whose median latency is the steady level. */
    static final int STEADY_BEFORE_S = 60;

    /** One notification: when it was first seen and the end of its window (epoch ms). */
    record Sample(long seenMs, long windowEndMs) {}

    /**
     * One second of the run: notifications seen in it, their mean latency, the staleness, and the
     * latency that counts — NaN when nothing was seen and nothing was due (the job was not late,
     * there was just no window to emit): such seconds are left out of means and medians and count
     * as steady.
     */
    record Second(int second, int records, double meanMs, double stalenessMs, double latencyMs) {
        static final String CSV_HEADER = "second,records,mean_latency_ms,staleness_ms,latency_ms";

        String csv() {
            return String.format(java.util.Locale.ROOT, "%d,%d,%.1f,%.1f,%.1f", second, records, meanMs, stalenessMs, latencyMs);
        }
    }

    /** A kill and what followed: the recovery time in seconds, or -1 when latency never came back before {@code until}. */
    record Recovery(double killAtS, double recoveryS, double steadyMs, double thresholdMs) {
        boolean recovered() {
            return recoveryS >= 0;
        }
    }

    private LatencySeries() {}

    /**
     * The per-second latency of seconds {@code [0, seconds)} after {@code startMs}.
     *
     * @param samples         the notifications seen, in any order
     * @param windowEndsWithOutput the window ends that have notifications in the reference computation
     * @param closableAtMs    a window end to the wall time it could first fire, or -1 when unknown
     *                        (windows closed by the end-of-input events)
     */
    static List<Second> perSecond(List<Sample> samples, NavigableSet<Long> windowEndsWithOutput, LongUnaryOperator closableAtMs,
            long startMs, int seconds) {
        List<List<Sample>> bySecond = new ArrayList<>();
        for (int s = 0; s < seconds; s++) {
            bySecond.add(new ArrayList<>());
        }
        for (Sample x : samples) {
            long s = Math.floorDiv(x.seenMs - startMs, 1000);
            if (s >= 0 && s < seconds) {
                bySecond.get((int) s).add(x);
            }
        }
        List<Second> out = new ArrayList<>();
        long newestEnd = Long.MIN_VALUE;
        for (int s = 0; s < seconds; s++) {
            double sum = 0;
            int n = 0;
            for (Sample x : bySecond.get(s)) {
                newestEnd = Math.max(newestEnd, x.windowEndMs);
                long closable = closableAtMs.applyAsLong(x.windowEndMs);
                if (closable >= 0) {
                    sum += x.seenMs - closable;
                    n++;
                }
            }
            double mean = n == 0 ? 0 : sum / n;
            double staleness = 0;
            if (newestEnd != Long.MIN_VALUE) {
                Long next = windowEndsWithOutput.higher(newestEnd);
                long closable = next == null ? -1 : closableAtMs.applyAsLong(next);
                long secondEndMs = startMs + (s + 1) * 1000L;
                if (closable >= 0) {
                    staleness = Math.max(0, secondEndMs - closable);
                }
            }
            boolean nothingDue = n == 0 && staleness == 0;
            out.add(new Second(s, bySecond.get(s).size(), mean, staleness, nothingDue ? Double.NaN : Math.max(mean, staleness)));
        }
        return out;
    }

    /**
     * The recovery after a kill at {@code killAtS} (seconds since the start), looking no further
     * than second {@code untilS} (the next kill or the end of the run). It ends no earlier than
     * {@code runningAgainS}, when every subtask ran again: between two windows' output a short
     * outage may not show in the latency, but the job was not recovered while it was down.
     */
    static Recovery recovery(List<Second> series, double killAtS, double runningAgainS, int untilS) {
        int killSecond = (int) Math.floor(killAtS);
        List<Double> before = new ArrayList<>();
        for (int s = Math.max(0, killSecond - STEADY_BEFORE_S); s < killSecond && s < series.size(); s++) {
            if (!Double.isNaN(series.get(s).latencyMs())) {
                before.add(series.get(s).latencyMs());
            }
        }
        double steady = median(before);
        double threshold = Math.max(2 * steady, steady + 250);
        int end = Math.min(untilS, series.size());
        int run = 0;
        for (int s = Math.max(killSecond + 1, (int) Math.ceil(runningAgainS)); s < end; s++) {
            double l = series.get(s).latencyMs();
            run = Double.isNaN(l) || l <= threshold ? run + 1 : 0;
            if (run == RECOVERED_FOR_S) {
                int back = s - RECOVERED_FOR_S + 1;
                return new Recovery(killAtS, back - killAtS, steady, threshold);
            }
        }
        return new Recovery(killAtS, -1, steady, threshold);
    }

    /** Seconds in {@code [from, to)} whose latency is above {@code maxMs}. */
    static int secondsAbove(List<Second> series, double maxMs, int from, int to) {
        int n = 0;
        for (int s = Math.max(0, from); s < Math.min(to, series.size()); s++) {
            if (series.get(s).latencyMs() > maxMs) {
                n++;
            }
        }
        return n;
    }

    /** Mean latency of the seconds in {@code [from, to)} that have one. */
    static double meanLatency(List<Second> series, int from, int to) {
        double sum = 0;
        int n = 0;
        for (int s = Math.max(0, from); s < Math.min(to, series.size()); s++) {
            double l = series.get(s).latencyMs();
            if (!Double.isNaN(l)) {
                sum += l;
                n++;
            }
        }
        return n == 0 ? Double.NaN : sum / n;
    }

    static double median(List<Double> values) {
        if (values.isEmpty()) {
            return 0;
        }
        List<Double> v = new ArrayList<>(values);
        v.sort(null);
        int m = v.size() / 2;
        return v.size() % 2 == 1 ? v.get(m) : (v.get(m - 1) + v.get(m)) / 2;
    }

    /**
     * {@code count} kill moments (seconds since the start) drawn from {@code seed}, uniform in
     * {@code [from, to]} among the sets whose moments are at least {@code minGap} seconds apart,
     * sorted: every run of an evaluation gets the same ones. Drawn exactly, without rejection: the
     * {@code count} moments uniform in {@code [from, to - (count - 1) * minGap]}, sorted, the i-th
     * then moved {@code i * minGap} later. The freedom is that first range: with little of it the
     * kills come almost evenly spaced whatever the seed (8 kills 90 s apart in 720 s: 90 s).
     *
     * @throws IllegalArgumentException when {@code count} kills cannot be {@code minGap} apart in the range
     */
    static List<Integer> killSeconds(long seed, int count, int from, int to, int minGap) {
        long span = count > 1 ? (long) (count - 1) * minGap : 0;
        if (count < 0 || to < from || span > to - from) {
            throw new IllegalArgumentException(count + " kills at least " + minGap + " s apart do not fit between second "
                    + from + " and " + to + ": run longer or kill less often");
        }
        Random random = new Random(seed);
        int freedom = (int) (to - from - span);
        int[] drawn = new int[count];
        for (int i = 0; i < count; i++) {
            drawn[i] = random.nextInt(freedom + 1);
        }
        java.util.Arrays.sort(drawn);
        List<Integer> kills = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            kills.add(from + drawn[i] + i * minGap);
        }
        return kills;
    }
}
