package io.fragstate.it;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.ToLongFunction;

/**
 * The soak's pass criteria, each a named {@link Check} with the figures behind it:
 * <ul>
 * <li>the committed output equals the reference (exactly once through every recovery), and every
 * planned kill happened and recovered;
 * <li>deletes: at least the plan's objects deleted;
 * <li>stated bounds, at every sample of every node: tombstones at most 100,000 entries and their
 * file at most {@link #TOMBSTONE_FILE_BOUND} (NETWORK.md: entries, 8 MiB of paths + 32 B per entry,
 * file at most 2 x live + 1,024 records); descriptors on fragment files at most {@link
 * #FRAGMENT_FD_BOUND} (FORMAT.md: an LRU of 128 handles, plus the files of uploads in progress);
 * all descriptors under half the process' soft limit;
 * <li>growth (runs of at least 30 minutes): per process alive in both windows and series (RSS,
 * counted heap, descriptors other than fragment files, tombstones, store bytes), the figure of the last 10 minutes [T - 10, T] is at most that of the 10 minutes after
 * warm-up plus 10 % of it, or plus a floor for small figures ({@link Series#floor}); also for the
 * sum over the nodes, whose floor is the nodes' floors together. A window's figure is the mean of
 * its samples, or for the counted heap the lowest sample ({@link Statistic#LOW}). Warm-up ends at
 * minute 10 or, later, when the tombstone sets are full ({@link #baselineFrom});
 * <li>no unexpected ERROR or panic line in any log ({@link LogScan}).
 * </ul>
 */
final class SoakVerdict {
    static final long TOMBSTONE_COUNT_BOUND = 100_000;
    /** 2 x (8 MiB of paths + 32 B x 100,000 entries) + 1,024 records of at most 4 KiB + 32 B each. */
    static final long TOMBSTONE_FILE_BOUND = 2 * ((8L << 20) + 32 * TOMBSTONE_COUNT_BOUND) + 1_024 * (4_096 + 32);
    /** 128 handles of the store's LRU + as many uploads in progress at once. */
    static final long FRAGMENT_FD_BOUND = 256;

    /** How a window's samples are summarised before the two windows are compared. */
    enum Statistic {
        MEAN,
        /**
         * The smallest sample: what the process holds between bursts. A leak lifts it; buffers of
         * transfers that happen to be in flight at a sample do not.
         */
        LOW
    }

    /** A sampled figure of a node, how its windows are summarised, and the absolute growth always allowed. */
    record Series(String name, ToLongFunction<NodeSampler.NodeSample> value, Statistic statistic, long floor) {}

    static final List<Series> SERIES = List.of(
            new Series("rss_bytes", NodeSampler.NodeSample::rssBytes, Statistic.MEAN, 32L << 20),
            // fragstate's own live heap in the process (the JVMs' RSS also holds the Java heap and
            // RocksDB). A TaskManager's reads 33 MB between checkpoints and up to 134 MB while one
            // uploads (the 105-minute soak of 2026-12-01), so its mean depends on when samples land.
            new Series("heap_bytes", NodeSampler.NodeSample::heapBytes, Statistic.LOW, 16L << 20),
            // Descriptors other than fragment files (sockets, logs, RocksDB): fragment files are an
            // LRU that fills towards its stated bound over the run, checked as a bound above.
            new Series("other_fds", s -> s.fds() < 0 || s.fragmentFds() < 0 ? -1 : s.fds() - s.fragmentFds(),
                    Statistic.MEAN, 16),
            new Series("tombstones", NodeSampler.NodeSample::tombstones, Statistic.MEAN, 1_000),
            // Not the tombstone file: a log compacted when it reaches twice its live size, a sawtooth
            // whose period (16-20 minutes at 4,300 deletes/min, the 60-minute soak of 2026-12-06) is
            // longer than a window, so two windows' figures compare phases, not growth. Its bound is
            // checked at every sample above.
            new Series("store_bytes", NodeSampler.NodeSample::storeBytes, Statistic.MEAN, 8L << 20));

    /** One criterion. */
    record Check(String name, boolean passed, String detail) {}

    /** One window comparison: node (or "all nodes"), series, the two windows' figures and the allowed maximum. */
    record Window(String node, String series, double baseline, double last, double allowed, boolean passed) {}

    static final String GROWTH_CHECK = "last 10 min within 10 % of the 10 min after warm-up";
    /** Minutes from the start before the baseline window can begin. */
    static final double MIN_WARM_UP_MINUTES = 10;
    /** The tombstone sets count as full once their sum over the nodes reaches this share of its maximum. */
    static final double TOMBSTONES_FULL = 0.99;

    final List<Check> checks = new ArrayList<>();
    final List<Window> windows = new ArrayList<>();
    /** The growth comparison's baseline: minutes [baselineFrom, baselineFrom + 10); NaN before it ran. */
    double baselineFrom = Double.NaN;

    boolean passed() {
        return checks.stream().allMatch(Check::passed);
    }

    static SoakVerdict of(SoakPlan plan, ScenarioRunner.Result result, SoakLoop loop, LogScan.Findings logs,
            String failure) {
        SoakVerdict v = new SoakVerdict();
        v.checks.add(new Check("run completed", failure == null, failure == null ? "yes" : failure));
        if (failure == null) {
            v.checks.add(new Check("exactly once", result.exactlyOnce(), String.format(
                    "%d committed, %d expected, %d missing, %d duplicated or wrong", result.committedNotifications,
                    result.expectedNotifications, result.missing.size(), result.duplicatesOrUnexpected.size())));
        }
        long plannedKills = (plan.minutes() * 60_000L - 1) / plan.killEvery().toMillis();
        v.checks.add(new Check("kills recovered", loop.recoveries.size() == plannedKills,
                loop.recoveries.size() + " of " + plannedKills + " planned kills recovered"));
        long deleted = loop.jobSamples.isEmpty() ? 0 : loop.jobSamples.get(loop.jobSamples.size() - 1).objectsDeletedTotal();
        v.checks.add(new Check("objects deleted", deleted >= plan.minDeletes(),
                String.format("%,d deleted, at least %,d required", deleted, plan.minDeletes())));
        v.bound("tombstones <= " + TOMBSTONE_COUNT_BOUND, loop, NodeSampler.NodeSample::tombstones, TOMBSTONE_COUNT_BOUND);
        v.bound("tombstone file <= " + TOMBSTONE_FILE_BOUND + " B", loop, NodeSampler.NodeSample::tombstoneFileBytes,
                TOMBSTONE_FILE_BOUND);
        v.bound("fragment file fds <= " + FRAGMENT_FD_BOUND, loop, NodeSampler.NodeSample::fragmentFds, FRAGMENT_FD_BOUND);
        List<String> overHalf = new ArrayList<>();
        loop.nodeSamples.stream().filter(s -> s.fdSoftLimit() > 0 && s.fds() * 2 > s.fdSoftLimit())
                .forEach(s -> overHalf.add(String.format(Locale.ROOT, "%s at minute %.1f: %d of %d", s.node(),
                        s.minute(), s.fds(), s.fdSoftLimit())));
        v.checks.add(new Check("fds < half the soft limit", overHalf.isEmpty(), overHalf.isEmpty() ? "every sample" : overHalf.toString()));
        if (plan.comparesWindows()) {
            v.compareWindows(plan, loop.nodeSamples);
        }
        v.checks.add(new Check("no ERROR or panic in the logs", logs.clean(), logs.clean()
                ? logs.filesScanned() + " files, expected lines: " + logs.expected()
                : logs.unexpected().size() + " lines, first: " + logs.unexpected().subList(0, Math.min(5, logs.unexpected().size()))));
        return v;
    }

    /** Every sample of every node: {@code f} (when known) at most {@code bound}. */
    private void bound(String name, SoakLoop loop, ToLongFunction<NodeSampler.NodeSample> f, long bound) {
        long max = loop.nodeSamples.stream().mapToLong(f).max().orElse(-1);
        String at = loop.nodeSamples.stream().filter(s -> f.applyAsLong(s) == max).findFirst()
                .map(s -> String.format(Locale.ROOT, " (%s, minute %.1f)", s.node(), s.minute())).orElse("");
        checks.add(new Check(name, max <= bound, "max " + max + at));
    }

    /**
     * Compares the windows per process (a node's samples with one pid; a TaskManager killed and
     * started again is a new process whose memory starts over, so its windows are not comparable)
     * and for the sum over all nodes at each minute, the last 10 minutes against the 10 minutes from
     * {@link #baselineFrom}. A process not sampled from before the baseline into the last window is
     * left out of the per-process comparisons and counted in the check's detail. A run too short for both windows
     * after warm-up fails the check, saying how long a run it needs.
     */
    void compareWindows(SoakPlan plan, List<NodeSampler.NodeSample> samples) {
        double lastFrom = plan.minutes() - 10;
        baselineFrom = baselineFrom(samples);
        double from = baselineFrom;
        if (from + 10 > lastFrom) {
            checks.add(new Check(GROWTH_CHECK, false, String.format(Locale.ROOT,
                    "not comparable: the tombstone sets were full at minute %.1f, so the baseline [%.1f, %.1f) "
                            + "overlaps the last 10 minutes; a run of at least %.0f minutes is needed",
                    from, from, from + 10, Math.ceil(from + 20))));
            return;
        }
        Set<String> processes = new TreeSet<>();
        Set<String> inBaseline = new HashSet<>();
        Set<String> inLast = new HashSet<>();
        Set<String> upBeforeBaseline = new HashSet<>();
        for (NodeSampler.NodeSample r : samples) {
            processes.add(process(r));
            if (r.minute() < from) {
                upBeforeBaseline.add(process(r));
            } else if (r.minute() < from + 10) {
                inBaseline.add(process(r));
            } else if (r.minute() >= lastFrom) {
                inLast.add(process(r));
            }
        }
        // A process started after the run's warm-up began warms up on its own (a TaskManager started
        // again after a kill loads its tombstones and fills its caches): not comparable either.
        inBaseline.retainAll(upBeforeBaseline);
        long partial = processes.stream().filter(p -> !inBaseline.contains(p) || !inLast.contains(p)).count();
        // The sum of n nodes is allowed what n nodes are allowed: n floors.
        long nodes = samples.stream().map(NodeSampler.NodeSample::node).distinct().count();
        for (Series s : SERIES) {
            Map<String, List<Long>> base = new LinkedHashMap<>();
            Map<String, List<Long>> last = new LinkedHashMap<>();
            Map<Double, Long> totalsBase = new LinkedHashMap<>();
            Map<Double, Long> totalsLast = new LinkedHashMap<>();
            for (NodeSampler.NodeSample r : samples) {
                long x = s.value().applyAsLong(r);
                if (x < 0) {
                    continue;
                }
                if (r.minute() >= from && r.minute() < from + 10) {
                    base.computeIfAbsent(process(r), p -> new ArrayList<>()).add(x);
                    totalsBase.merge(r.minute(), x, Long::sum);
                } else if (r.minute() >= lastFrom) {
                    last.computeIfAbsent(process(r), p -> new ArrayList<>()).add(x);
                    totalsLast.merge(r.minute(), x, Long::sum);
                }
            }
            for (String p : processes) {
                if (!inBaseline.contains(p)) {
                    continue;
                }
                window(p, s, summary(s, base.get(p)), summary(s, last.get(p)), 1);
            }
            window("all nodes", s, summary(s, totalsBase.values()), summary(s, totalsLast.values()), nodes);
        }
        long failed = windows.stream().filter(w -> !w.passed()).count();
        checks.add(new Check(GROWTH_CHECK, failed == 0, String.format(Locale.ROOT,
                "baseline minutes %.1f-%.1f (%s); %d of %d comparisons over (table in RESULTS.md); %d of %d "
                        + "processes not up from before the baseline to the end (killed, or started after a kill) count "
                        + "only in the sum over all nodes",
                from, from + 10, from > MIN_WARM_UP_MINUTES ? "the tombstone sets were full then" : "after 10 minutes",
                failed, windows.size(), partial, processes.size())));
    }

    /**
     * Where the baseline window starts: minute 10, or later the first sample at which the nodes'
     * tombstones together reach {@link #TOMBSTONES_FULL} of their maximum over the run. Until the
     * tombstone sets are full (8 MiB of paths each, about 60,000 entries at the soak's delete rate)
     * they grow by design, and the counted heap with them; how long that takes depends on the delete
     * rate of the run (full at minute 11 at 6,800 deletes/min, at minute 24 at 4,300/min). Their
     * bound is checked on its own at every sample. Samples without a tombstone count are ignored.
     */
    static double baselineFrom(List<NodeSampler.NodeSample> samples) {
        Map<Double, Long> tombstones = new TreeMap<>();
        for (NodeSampler.NodeSample r : samples) {
            if (r.tombstones() >= 0) {
                tombstones.merge(r.minute(), r.tombstones(), Long::sum);
            }
        }
        long max = tombstones.values().stream().mapToLong(Long::longValue).max().orElse(0);
        double full = tombstones.entrySet().stream().filter(e -> e.getValue() >= TOMBSTONES_FULL * max)
                .mapToDouble(Map.Entry::getKey).findFirst().orElse(0);
        return Math.max(MIN_WARM_UP_MINUTES, full);
    }

    /** A node's process: the node's name and the pid that sampled it. */
    private static String process(NodeSampler.NodeSample r) {
        return r.node() + " (pid " + r.pid() + ")";
    }

    /** Compares one pair of windows; {@code floors}: how many nodes' floors the figure sums. */
    private void window(String node, Series s, double baseline, double last, long floors) {
        if (Double.isNaN(baseline) || Double.isNaN(last)) {
            return; // no samples in one window: nothing to compare
        }
        double allowed = baseline + Math.max(0.10 * baseline, (double) s.floor() * floors);
        windows.add(new Window(node, s.name(), baseline, last, allowed, last <= allowed));
    }

    /** The window's figure for {@code s}; NaN without samples. */
    private static double summary(Series s, Collection<Long> window) {
        if (window == null || window.isEmpty()) {
            return Double.NaN;
        }
        return s.statistic() == Statistic.LOW
                ? window.stream().mapToLong(Long::longValue).min().getAsLong()
                : window.stream().mapToLong(Long::longValue).average().getAsDouble();
    }
}
