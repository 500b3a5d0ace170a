package io.fragstate.it;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The figures {@code fragstate tune --recovery fragstate} predicts recovery time from
 * ({@code RecoveryFigures} of {@code rust-core/tune/src/predict.rs}), estimated from the failure
 * experiments: the medians of what each kill's timeline measured — detection (kill to Flink's
 * failure), restart (to every subtask RUNNING, less the window state's restore), the state a
 * window subtask restores (the checkpoint's full state size over the parallelism) and the rate it
 * restored at (that state over its INITIALIZING→RUNNING time, fragstate's fetch from the peers) —
 * and one calibrated figure, the job's throughput with a backlog: from each experiment whose
 * latency came back later than the job ran again, the backlog {@code t·(lost + down)} over the
 * catch-up {@code recovery - down}, plus {@code t}; the highest of them, and never below 1.1x the
 * highest input the experiments saw with steady latency. The highest, not the median: latency is
 * only seen when a window fires (every 10 s in Traffic Monitoring), so a measured catch-up is the
 * real one plus the wait for the next window, and each figure is a lower bound of the rate — the
 * 2026-12-04 experiments gave 5,600–64,500 records/s, the median 17,700 where the evaluation
 * runs' long recoveries showed about 80,000 (rust-core/tune/README.md, the simulation). No I/O.
 */
final class RecoveryFiguresEstimate {
    private RecoveryFiguresEstimate() {}

    /** The figures, or null when no experiment recovered. Keys as in {@code RecoveryFigures}; {@code basis} says what each came from. */
    static Map<String, Object> of(List<Map<String, Object>> experiments) {
        List<Double> detection = new ArrayList<>();
        List<Double> restart = new ArrayList<>();
        List<Double> state = new ArrayList<>();
        List<Double> rate = new ArrayList<>();
        List<Double> capacity = new ArrayList<>();
        double maxSteadyInput = 0;
        for (Map<String, Object> e : experiments) {
            if (!(Boolean) e.get("recovered")) {
                continue;
            }
            double det = num(e, "detection_s");
            double running = num(e, "kill_to_running_s");
            double restore = num(e, "window_restore_s");
            double bytes = num(e, "state_bytes_per_subtask");
            double t = num(e, "throughput");
            double recovery = num(e, "recovery_s");
            double lost = num(e, "kill_at_s") - num(e, "checkpoint_before_kill_s");
            maxSteadyInput = Math.max(maxSteadyInput, t);
            if (det >= 0 && running >= 0 && restore >= 0) {
                detection.add(det);
                restart.add(Math.max(0, running - det - restore));
            }
            if (bytes > 0 && restore > 0) {
                state.add(bytes);
                rate.add(bytes / restore);
            }
            if (running >= 0 && recovery - running > 1) {
                capacity.add(t + t * (lost + running) / (recovery - running));
            }
        }
        if (detection.isEmpty() || state.isEmpty()) {
            return null;
        }
        double maxThroughput = Math.max(capacity.stream().mapToDouble(Double::doubleValue).max().orElse(0), 1.1 * maxSteadyInput);
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("detection_s", LatencySeries.median(detection));
        f.put("restart_s", LatencySeries.median(restart));
        f.put("state_bytes", LatencySeries.median(state));
        f.put("restore_bytes_per_s", LatencySeries.median(rate));
        f.put("max_throughput", maxThroughput);
        return f;
    }

    private static double num(Map<String, Object> e, String key) {
        Object v = e.get(key);
        return v instanceof Number n ? n.doubleValue() : -1;
    }
}
