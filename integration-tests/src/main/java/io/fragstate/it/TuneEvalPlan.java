package io.fragstate.it;

import io.fragstate.generator.RateProfile;
import io.fragstate.traffic.CliArgs;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.Set;

/**
 * One run of the checkpoint-interval evaluation (issue 15, {@code ci/tune-eval.sh}), from its
 * command line. Every run of an evaluation feeds the Traffic Monitoring job the Daedalus rate
 * profile, time-compressed to the run's length, and kills a TaskManager at the same seeded
 * moments; only the way checkpoints are timed differs:
 *
 * <ul>
 *   <li>{@code fixed:S}: Flink's own periodic checkpoints every S seconds (the baseline);
 *   <li>{@code controller}: a long configured interval (the fallback) and {@code fragstate tune}
 *       triggering checkpoints at the interval it chooses, fitted to {@code --experiments};
 *   <li>{@code experiments}: the failure experiments on a shadow copy of the job (phase 2): the
 *       harness triggers checkpoints at each of {@code --experiment-intervals} at a high and at a
 *       low load ({@link ExperimentSchedule}), kills a TaskManager at a seeded moment within the
 *       interval, and writes {@code experiments.json}.
 * </ul>
 *
 * @param mode               fixed, controller or experiments
 * @param fixedIntervalS     for fixed: the interval
 * @param minutes            how long the generator feeds the job
 * @param scale              active vehicles = profile count x scale (peak 99,989 x scale events/s)
 * @param compression        the profile's time axis squeezed this many times
 * @param kills              kills at seeded moments (fixed and controller)
 * @param seed               of the kill moments (and the experiments' offsets)
 * @param maxLatencyMs       the latency constraint (Khaos: 1,000 ms)
 * @param maxRecoveryS       the recovery-time constraint (Khaos: 120 s)
 * @param experiments        for controller: the experiments file the models are fitted to
 * @param recoveryFrom       for controller: {@code experiments} (the regression) or {@code fragstate}
 * @param figures            for controller with {@code fragstate}: fragstate's figures file
 * @param decideEveryS       for controller: seconds between decisions
 * @param objective          for controller: {@code time-lost} (the default: {@code fragstate tune --mtbf}
 *                           with the run's own failure rate, {@link #mtbfS()}) or {@code khaos}
 * @param checkpointBudget   for controller: {@code fragstate tune --checkpoint-budget} (a share of
 *                           time, 0 for none), planned over the experiments run's input rate
 *                           ({@link #loadProfile()})
 * @param candidates         for controller: {@code fragstate tune --candidates} (empty: its default,
 *                           Khaos's 10-120 s)
 * @param experimentIntervals for experiments: the intervals, in the order of {@link ExperimentSchedule}
 * @param taskManagers       TaskManager JVMs (2 slots each)
 * @param parallelism        of the job
 * @param out                this run's folder: {@code --out} / {@code --name} (default fixed-Ss, controller or experiments)
 */
record TuneEvalPlan(String mode, int fixedIntervalS, int minutes, double scale, int compression, int kills, long seed,
        double maxLatencyMs, double maxRecoveryS, Path experiments, String recoveryFrom, Path figures, int decideEveryS,
        String objective, double checkpointBudget, String candidates, List<Integer> experimentIntervals, int taskManagers, int parallelism, Path out) {

    static final String FIXED = "fixed";
    static final String CONTROLLER = "controller";
    static final String EXPERIMENTS = "experiments";
    static final String TIME_LOST = "time-lost";
    static final String KHAOS = "khaos";
    /** The interval configured in Flink while something else triggers checkpoints: the fallback. */
    static final int FALLBACK_INTERVAL_S = 3600;
    /**
     * No kill in the first seconds (the job and the controller settle) nor in the last (a recovery
     * must fit: 150 s, or half of a short run).
     */
    static final int KILL_FROM_S = 90;
    static final int KILL_TAIL_S = 150;

    static TuneEvalPlan parse(String[] args, Path repo) {
        CliArgs a = CliArgs.parse(args, Set.of("repo", "mode", "minutes", "scale", "compression", "kills", "seed",
                "max-latency-ms", "max-recovery-s", "experiments", "recovery", "figures", "decide-every", "objective",
                "checkpoint-budget", "candidates",
                "experiment-intervals", "task-managers", "parallelism", "out", "name"), Set.of());
        String modeArg = a.get("mode", "");
        String mode;
        int fixed = 0;
        if (modeArg.startsWith(FIXED + ":")) {
            mode = FIXED;
            fixed = parsePositive("--mode fixed:S", modeArg.substring(FIXED.length() + 1));
        } else if (modeArg.equals(CONTROLLER) || modeArg.equals(EXPERIMENTS)) {
            mode = modeArg;
        } else {
            throw new IllegalArgumentException("--mode must be fixed:SECONDS, controller or experiments, got '" + modeArg + "'");
        }
        int minutes = a.getInt("minutes", 10);
        if (minutes < 3 || minutes > 40) {
            throw new IllegalArgumentException("--minutes must be between 3 and 40, got " + minutes);
        }
        int profileLength = RateProfile.daedalus().length();
        int compression = a.getInt("compression", (int) Math.ceil(profileLength / (minutes * 60.0)));
        double scale = a.getDouble("scale", 0.02);
        if (!(scale > 0) || scale > 1) {
            throw new IllegalArgumentException("--scale must be in (0, 1], got " + scale);
        }
        Path experiments = a.has("experiments") ? Path.of(a.get("experiments", "")).toAbsolutePath() : null;
        if (mode.equals(CONTROLLER) && experiments == null) {
            throw new IllegalArgumentException("--mode controller needs --experiments FILE (written by a --mode experiments run)");
        }
        String recovery = a.get("recovery", "experiments");
        if (!recovery.equals("experiments") && !recovery.equals("fragstate")) {
            throw new IllegalArgumentException("--recovery must be experiments or fragstate, got '" + recovery + "'");
        }
        Path figures = a.has("figures") ? Path.of(a.get("figures", "")).toAbsolutePath() : null;
        if (recovery.equals("fragstate") && figures == null) {
            throw new IllegalArgumentException("--recovery fragstate needs --figures FILE");
        }
        String objective = a.get("objective", TIME_LOST);
        if (!objective.equals(TIME_LOST) && !objective.equals(KHAOS)) {
            throw new IllegalArgumentException("--objective must be " + TIME_LOST + " or " + KHAOS + ", got '" + objective + "'");
        }
        double budget = a.getDouble("checkpoint-budget", 0);
        if (!(budget >= 0 && budget <= 1)) {
            throw new IllegalArgumentException("--checkpoint-budget must be a share of time in (0, 1] (0: none), got " + budget);
        }
        if (budget > 0 && !objective.equals(TIME_LOST)) {
            throw new IllegalArgumentException("--checkpoint-budget prices checkpoint time in the " + TIME_LOST + " objective, not in " + objective);
        }
        String candidates = a.get("candidates", "");
        if (!candidates.isEmpty()) {
            Arrays.stream(candidates.split(",")).forEach(c -> parsePositive("--candidates", c.strip()));
        }
        List<Integer> intervals = Arrays.stream(a.get("experiment-intervals", "120,10,60,30").split(","))
                .map(s -> parsePositive("--experiment-intervals", s.strip())).toList();
        String name = a.get("name", mode.equals(FIXED) ? "fixed-" + fixed + "s" : mode);
        Path out = Path.of(a.get("out", repo.resolve("integration-tests/tune/results")
                .resolve(java.time.LocalDate.now(java.time.ZoneOffset.UTC).toString()).toString())).resolve(name);
        TuneEvalPlan plan = new TuneEvalPlan(mode, fixed, minutes, scale, compression, a.getInt("kills", 3), a.getLong("seed", 42),
                a.getDouble("max-latency-ms", 1000), a.getDouble("max-recovery-s", 120), experiments, recovery, figures,
                a.getInt("decide-every", 30), objective, budget, candidates, intervals, a.getInt("task-managers", 5), a.getInt("parallelism", 4),
                out.toAbsolutePath().normalize());
        plan.killSeconds(); // refuses a kill count that does not fit, before anything starts
        return plan;
    }

    private static int parsePositive(String what, String value) {
        try {
            int v = Integer.parseInt(value);
            if (v > 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // named below
        }
        throw new IllegalArgumentException(what + " expects a positive whole number of seconds, got '" + value + "'");
    }

    int durationSeconds() {
        return minutes * 60;
    }

    /** The seeded kill moments (seconds after the generator started); none in experiments mode, which times its own. */
    List<Integer> killSeconds() {
        if (mode.equals(EXPERIMENTS)) {
            return List.of();
        }
        int to = Math.max(KILL_FROM_S, durationSeconds() - Math.min(KILL_TAIL_S, durationSeconds() / 2));
        return LatencySeries.killSeconds(seed, kills, KILL_FROM_S, to, 90);
    }

    /**
     * The mean time between failures the controller is told ({@code --mtbf}): the run's own, its
     * length over its kills, as an operator knows it from the job's history. Empty for Khaos's
     * objective or a run without kills.
     */
    OptionalInt mtbfS() {
        return objective.equals(TIME_LOST) && kills > 0 ? OptionalInt.of(durationSeconds() / kills) : OptionalInt.empty();
    }

    /**
     * The load the budget is planned over: the experiments run's input rate, one sample per
     * second (its latency.csv, beside experiments.json) — the job's steady state under the same
     * profile, as Khaos's first phase records it.
     */
    Path loadProfile() {
        return experiments.resolveSibling("latency.csv");
    }

    /** The interval Flink is configured with. */
    int configuredIntervalS() {
        return mode.equals(FIXED) ? fixedIntervalS : FALLBACK_INTERVAL_S;
    }

    String describe() {
        return String.format(Locale.ROOT, "%s, %d min, Daedalus profile compressed %dx at scale %s (peak %,d events/s)",
                mode.equals(FIXED) ? "fixed " + fixedIntervalS + " s" : mode, minutes, compression, scale,
                Math.round(99_989 * scale));
    }
}
