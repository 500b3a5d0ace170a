package io.fragstate.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Samples a running benchmark job every 500 ms on its own thread: the events/s its sources emit
 * (the change of their summed {@code numRecordsOut} over the last 2 s; Flink's own
 * {@code numRecordsOutPerSecond} is a 60-second average, too slow to see a recovery) and the
 * machine's CPU utilisation (from {@code
 * /proc/stat}: every emulated host shares this machine's cores, so this tells a CPU-bound restore
 * from a link-bound one). A sample without a rate (REST unavailable, or the counters restarted
 * with new task attempts) has rate -1.
 */
final class BenchSampler implements AutoCloseable {
    /** One sample: wall-clock ms, events/s of the sources, busy fraction of all cores since the last one. */
    record Sample(long atMs, double eventsPerSecond, double cpuBusy) {}

    /** The rate is taken over this much time (the JobManager fetches metrics every 500 ms in the benchmark). */
    private static final long WINDOW_MS = 2_000;

    private final FlinkRest rest;
    private volatile String jobId;
    private final String sourceVertex;
    private final List<Sample> samples = new ArrayList<>();
    private final Thread thread;
    private volatile boolean stop;

    BenchSampler(FlinkRest rest, String jobId, String sourceVertex) {
        this.rest = rest;
        this.jobId = jobId;
        this.sourceVertex = sourceVertex;
        this.thread = new Thread(this::loop, "bench-sampler");
        thread.setDaemon(true);
        thread.start();
    }

    private void loop() {
        long[] cpu = cpuTicks();
        // (time, count) of this task attempt's samples within the window
        java.util.ArrayDeque<long[]> window = new java.util.ArrayDeque<>();
        while (!stop) {
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                return;
            }
            long[] now = cpuTicks();
            double busy = now[1] == cpu[1] ? 0 : (double) (now[0] - cpu[0]) / (now[1] - cpu[1]);
            cpu = now;
            long count = -1;
            try {
                // the job's details first: the JobManager's metric store maps each subtask to its
                // current attempt when they are asked for (seen: a source restarted in a failover
                // kept reading its old attempt's frozen count for minutes without this)
                rest.job(jobId);
                count = (long) rest.subtaskMetricSum(jobId, sourceVertex, "numRecordsOut");
            } catch (IllegalStateException e) {
                // REST unavailable or the vertex restarting: no count for this sample
            }
            long at = System.currentTimeMillis();
            if (count < 0 || (!window.isEmpty() && count < window.peekLast()[1])) {
                window.clear(); // no figure, or new task attempts counting from 0
            }
            double rate = -1;
            if (count >= 0) {
                while (!window.isEmpty() && at - window.peekFirst()[0] > WINDOW_MS) {
                    window.pollFirst();
                }
                if (!window.isEmpty() && at > window.peekFirst()[0]) {
                    rate = (count - window.peekFirst()[1]) * 1000.0 / (at - window.peekFirst()[0]);
                }
                window.addLast(new long[] {at, count});
            }
            synchronized (samples) {
                samples.add(new Sample(at, rate, busy));
            }
        }
    }

    /** {busy ticks, total ticks} of all cores. */
    private static long[] cpuTicks() {
        try {
            String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
            long total = 0;
            for (int i = 1; i < f.length; i++) {
                total += Long.parseLong(f[i]);
            }
            long idle = Long.parseLong(f[4]) + Long.parseLong(f[5]); // idle + iowait
            return new long[] {total - idle, total};
        } catch (IOException | RuntimeException e) {
            return new long[] {0, 0};
        }
    }

    /**
     * Samples {@code newJobId} from now on: the same job graph submitted again (its vertex ids
     * are the same; its counters start from 0, which the rate window already treats as new attempts).
     */
    void follow(String newJobId) {
        this.jobId = newJobId;
    }

    List<Sample> samples() {
        synchronized (samples) {
            return List.copyOf(samples);
        }
    }

    /** Median events/s of the samples in [fromMs, toMs] that have a rate. */
    double medianRate(long fromMs, long toMs) {
        double[] r = samples().stream().filter(s -> s.atMs >= fromMs && s.atMs <= toMs && s.eventsPerSecond >= 0)
                .mapToDouble(Sample::eventsPerSecond).sorted().toArray();
        return r.length == 0 ? -1 : r[r.length / 2];
    }

    /** Mean CPU busy fraction of the samples in [fromMs, toMs]. */
    double meanCpu(long fromMs, long toMs) {
        return samples().stream().filter(s -> s.atMs >= fromMs && s.atMs <= toMs).mapToDouble(Sample::cpuBusy)
                .average().orElse(-1);
    }

    /** First sample time at or after {@code fromMs} whose rate is at least {@code rate}, or -1. */
    long firstAtLeast(long fromMs, double rate) {
        return samples().stream().filter(s -> s.atMs >= fromMs && s.eventsPerSecond >= rate).mapToLong(Sample::atMs)
                .findFirst().orElse(-1);
    }

    @Override
    public void close() throws InterruptedException {
        stop = true;
        thread.interrupt();
        thread.join(5000);
    }
}
