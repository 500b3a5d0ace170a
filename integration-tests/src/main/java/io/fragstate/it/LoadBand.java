package io.fragstate.it;

import java.util.List;

/**
 * The load a failure experiment kills at (issue 15, phase 2). A regression of recovery time on
 * interval and throughput extrapolates badly from kills that all fell at low loads (the first
 * evaluation: experiments up to 7,300 events/s, a peak of 11,200, a recovery predicted at 3 s and
 * measured at 27 s), so the experiments alternate between a high and a low band of the run's
 * profile, and every interval meets both bands within two rounds of the intervals.
 *
 * @param name         high or low (written with each experiment)
 * @param fromFraction the band's lower bound, a fraction of the run's peak load
 * @param toFraction   its upper bound
 */
record LoadBand(String name, double fromFraction, double toFraction) {
    static final LoadBand HIGH = new LoadBand("high", 0.5, 1.0);
    static final LoadBand LOW = new LoadBand("low", 0.0, 0.25);

    /** Experiment {@code n}'s band with {@code intervals} intervals taken in turn: high, low, high, … and the other way round in the next round. */
    static LoadBand of(int n, int intervals) {
        return (n + n / intervals) % 2 == 0 ? HIGH : LOW;
    }

    boolean holds(double load, double peak) {
        return load >= fromFraction * peak && load <= toFraction * peak;
    }

    /**
     * The second in {@code [from, to]} a kill in this band aims at, or -1: judged by the mean load
     * of the {@code window} seconds before it (the throughput an experiment records), the first
     * second in the band — for the high band, the busiest second of the stretch in the band that
     * starts there, so that the experiments reach the peak the controller must plan for.
     * {@code loadPerSecond}: events/s, one per second of the run.
     */
    int aim(List<Double> loadPerSecond, int from, int to, int window) {
        double peak = loadPerSecond.stream().mapToDouble(Double::doubleValue).max().orElse(0);
        double[] prefix = new double[loadPerSecond.size() + 1];
        for (int s = 0; s < loadPerSecond.size(); s++) {
            prefix[s + 1] = prefix[s] + loadPerSecond.get(s);
        }
        int last = Math.min(to, loadPerSecond.size());
        int best = -1;
        double bestLoad = -1;
        for (int s = Math.max(window, from); s <= last; s++) {
            double mean = (prefix[s] - prefix[s - window]) / window;
            if (!holds(mean, peak)) {
                if (best >= 0) {
                    break;
                }
                continue;
            }
            if (best < 0 || (this.equals(HIGH) && mean > bestLoad)) {
                best = s;
                bestLoad = mean;
            }
            if (!this.equals(HIGH)) {
                break;
            }
        }
        return best;
    }
}
