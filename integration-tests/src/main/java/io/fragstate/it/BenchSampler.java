package io.fragstate.it;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Samples a running benchmark job every 500 ms on its own thread: the events/s its sources emit
 * (the change of their summed {@code numRecordsOut} over the last 2 s; Flink's own
 * {@code numRecordsOutPerSecond} is a 60-second average, too slow to see a recovery) and the
 * machine's CPU utilisation (from {@code
 * /proc/stat}: every emulated host shares this machine's cores, so this tells a CPU-bound restore
 * from a link-bound one). A sample without a rate (no TaskManager answered, or the counters
 * restarted with new task attempts) has rate -1.
 *
 * <p>The count is scraped from every TaskManager's Prometheus reporter ({@link #REPORTER_PORT}),
 * not from the JobManager's REST metrics: after a {@code kill -9} the JobManager's metric store
 * kept serving the source's count unchanged for over two minutes while the source emitted 2,000
 * events/s (3 GB run; its fetcher waits for every TaskManager it asked, the dead one included).
 */
final class BenchSampler implements AutoCloseable {
    /** One sample: wall-clock ms, events/s of the sources, busy fraction of all cores since the last one. */
    record Sample(long atMs, double eventsPerSecond, double cpuBusy) {}

    /** The rate is taken over this much time (the JobManager fetches metrics every 500 ms in the benchmark). */
    private static final long WINDOW_MS = 2_000;

    /** Port of the Prometheus reporter on every emulated host (each its own address). */
    static final int REPORTER_PORT = 9250;
    /** {@code flink_taskmanager_job_task_numRecordsOut{labels} value} lines of the reporter. */
    private static final Pattern RECORDS_OUT = Pattern.compile("^flink_taskmanager_job_task_numRecordsOut\\{([^}]*)\\}\\s+(\\S+)$");

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(300)).build();
    private final List<String> taskManagerHosts;
    private volatile String jobId;
    /** The source task's name as the reporter labels it (characters other than letters, digits, : and _ become _). */
    private final String sourceTaskLabel;
    private final List<Sample> samples = new ArrayList<>();
    private final Thread thread;
    private volatile boolean stop;

    /** Samples the tasks named {@code sourceTask} of {@code jobId} on the reporters of {@code taskManagerHosts}. */
    BenchSampler(List<String> taskManagerHosts, String jobId, String sourceTask) {
        this.taskManagerHosts = List.copyOf(taskManagerHosts);
        this.jobId = jobId;
        this.sourceTaskLabel = sourceTask.replaceAll("[^A-Za-z0-9:_]", "_");
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
            long count = sourceCount();
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

    /**
     * The source tasks' records out, summed over the TaskManagers that answered; -1 when none
     * reports the job's source (not running yet, or every reporter unreachable).
     */
    private long sourceCount() {
        long sum = 0;
        boolean found = false;
        String job = "job_id=\"" + jobId + "\"";
        String task = "task_name=\"" + sourceTaskLabel + "\"";
        for (String host : taskManagerHosts) {
            String page;
            try {
                HttpRequest req = HttpRequest.newBuilder(URI.create("http://" + host + ":" + REPORTER_PORT + "/metrics"))
                        .timeout(Duration.ofSeconds(1)).GET().build();
                page = http.send(req, HttpResponse.BodyHandlers.ofString()).body();
            } catch (IOException e) {
                continue; // a killed TaskManager, or one not started yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return -1;
            }
            for (String line : page.split("\n")) {
                Matcher m = RECORDS_OUT.matcher(line);
                if (m.matches() && m.group(1).contains(job) && m.group(1).contains(task)) {
                    sum += (long) Double.parseDouble(m.group(2));
                    found = true;
                }
            }
        }
        return found ? sum : -1;
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
