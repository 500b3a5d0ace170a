package io.fragstate.it;

import io.fragstate.traffic.CliArgs;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;

/**
 * The parameters of one soak run ({@code ci/soak.sh}), from its command line. Defaults are issue
 * 10's numbers: 60 minutes, a {@code kill -9} of a TaskManager every 10 minutes, a sample every
 * minute, at least 500,000 object deletes, and the growth check between minutes 10-20 and the
 * last 10 minutes (only for runs of at least 30 minutes).
 *
 * @param minutes        how long the job runs under sampling (the generator feeds it that long)
 * @param killEvery      period of the {@code kill -9}s; the first comes after one period
 * @param sampleEvery    period of the samples (and of the progress line)
 * @param minDeletes     objects that must have been deleted by the end
 * @param parallelism    of the job
 * @param taskManagers   TaskManager JVMs (2 slots each); a killed one is started again after the recovery
 * @param standaloneNodes fragstate nodes outside Flink (storage only), besides the JobManager's and the
 *                       TaskManagers' own; more of them make a larger storage cluster for the same job
 * @param out            folder of the samples, summary.json, RESULTS.md (and the plots ci/soak.sh adds)
 */
record SoakPlan(int minutes, Duration killEvery, Duration sampleEvery, long minDeletes, int parallelism,
        int taskManagers, int standaloneNodes, Path out) {

    /** Issue 10's delete target for a 60-minute run. */
    static final long ISSUE_DELETES = 500_000;

    /**
     * Standalone nodes by default, and the fewest: with a TaskManager killed, RS(4,2) still needs six
     * storage nodes besides a writer.
     */
    static final int DEFAULT_STANDALONE_NODES = 2;

    /** More would not fit beside the Flink cluster on a small machine (each node is a process). */
    static final int MAX_STANDALONE_NODES = 64;

    /** Runs this long or longer compare the last 10 minutes with the 10 minutes after warm-up. */
    static final int MIN_MINUTES_FOR_WINDOWS = 30;

    static SoakPlan parse(String[] args, Path repo) {
        CliArgs a = CliArgs.parse(args, Set.of("repo", "minutes", "kill-every", "sample-every", "min-deletes",
                "parallelism", "task-managers", "standalone-nodes", "out"), Set.of());
        int minutes = a.getInt("minutes", 60);
        Duration killEvery = Duration.ofMillis((long) (a.getDouble("kill-every", 10) * 60_000));
        Duration sampleEvery = Duration.ofSeconds(a.getLong("sample-every", 60));
        long minDeletes = a.getLong("min-deletes", ISSUE_DELETES * minutes / 60);
        if (minutes < 1 || killEvery.isNegative() || killEvery.isZero() || sampleEvery.toSeconds() < 5) {
            throw new IllegalArgumentException("--minutes must be >= 1, --kill-every > 0 (minutes), --sample-every >= 5 (seconds)");
        }
        int standaloneNodes = a.getInt("standalone-nodes", DEFAULT_STANDALONE_NODES);
        if (standaloneNodes < DEFAULT_STANDALONE_NODES || standaloneNodes > MAX_STANDALONE_NODES) {
            throw new IllegalArgumentException("--standalone-nodes must be between " + DEFAULT_STANDALONE_NODES + " and "
                    + MAX_STANDALONE_NODES + ", got " + standaloneNodes);
        }
        Path out = Path.of(a.get("out", repo.resolve("integration-tests/soak/results")
                .resolve(java.time.LocalDate.now(java.time.ZoneOffset.UTC).toString()).toString()));
        return new SoakPlan(minutes, killEvery, sampleEvery, minDeletes, a.getInt("parallelism", 8),
                a.getInt("task-managers", 5), standaloneNodes, out.toAbsolutePath().normalize());
    }

    /** True when the run is long enough for the window comparison. */
    boolean comparesWindows() {
        return minutes >= MIN_MINUTES_FOR_WINDOWS;
    }
}
