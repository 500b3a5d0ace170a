package io.fragstate.it;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Which failure experiment runs next (issue 15, phase 2): every interval at a high and at a low
 * load ({@link LoadBand}), in a fixed order, skipping a pair whose band does not come again before
 * the run ends. With the intervals 120, 10, 60, 30 the order starts with the corners of the
 * recovery model (the longest interval at a high load, the shortest at a low one), which a
 * 20-minute run of the Daedalus profile reaches (6 experiments). The run's load per second
 * is known ahead (the generator plays a fixed profile), so the kill is aimed at a second in the
 * band: after a steady stretch of at least the interval (and 30 s), a checkpoint is triggered so
 * that it completes the experiment's offset before that second — the kill still falls a seeded
 * fraction of an interval after a completed checkpoint, as a failure at a random moment would.
 */
final class ExperimentSchedule {
    /** The shortest steady stretch before a kill. */
    static final int MIN_STEADY_S = 30;
    /** The seconds before a kill whose mean input rate an experiment records as its throughput. */
    static final int THROUGHPUT_WINDOW_S = 30;
    /** Allowed for a triggered checkpoint to complete (the first evaluation's took 0.5 s on average). */
    static final int CHECKPOINT_ALLOWANCE_S = 2;

    /** The next experiment: its interval, its band, and the second of the run its kill is aimed at. */
    record Pick(int intervalS, LoadBand band, int killSecond) {}

    private record Pair(int intervalS, LoadBand band) {}

    private final List<Pair> all = new ArrayList<>();
    private final List<Pair> pending = new ArrayList<>();
    private final List<Double> loadPerSecond;

    ExperimentSchedule(List<Integer> intervals, List<Double> loadPerSecond) {
        for (int n = 0; n < 2 * intervals.size(); n++) {
            all.add(new Pair(intervals.get(n % intervals.size()), LoadBand.of(n, intervals.size())));
        }
        this.loadPerSecond = loadPerSecond;
    }

    /**
     * The first pending experiment, in order, whose band comes after {@code nowS} and the lead
     * ({@link #leadS}) and no later than {@code latestKillS} (none: empty). With every pair done,
     * or none of the pending ones possible any more, any pair may run again.
     */
    Optional<Pick> next(double nowS, double offsetFraction, int latestKillS) {
        if (pending.isEmpty()) {
            pending.addAll(all);
        }
        Optional<Pick> pick = firstPossible(pending, nowS, offsetFraction, latestKillS);
        if (pick.isEmpty()) {
            pick = firstPossible(all, nowS, offsetFraction, latestKillS);
        }
        pick.ifPresent(p -> pending.remove(new Pair(p.intervalS(), p.band())));
        return pick;
    }

    /** The seconds to wait for the steady stretch and the offset before a kill at interval {@code intervalS}. */
    static double leadS(int intervalS, double offsetFraction) {
        return Math.max(intervalS, MIN_STEADY_S) + offsetFraction * intervalS + CHECKPOINT_ALLOWANCE_S;
    }

    private Optional<Pick> firstPossible(List<Pair> pairs, double nowS, double offsetFraction, int latestKillS) {
        for (Pair p : pairs) {
            int s = p.band().aim(loadPerSecond, (int) Math.ceil(nowS + leadS(p.intervalS(), offsetFraction)), latestKillS,
                    THROUGHPUT_WINDOW_S);
            if (s >= 0) {
                return Optional.of(new Pick(p.intervalS(), p.band(), s));
            }
        }
        return Optional.empty();
    }
}
