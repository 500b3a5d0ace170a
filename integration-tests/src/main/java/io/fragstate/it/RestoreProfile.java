package io.fragstate.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the machine's CPU goes while a benchmark run recovers ({@code ci/bench.sh --cpu-profile}):
 * {@code perf record} samples every core from the kill until every subtask runs again, then
 * {@code perf report} splits the samples by process and by shared object — fragstate's native
 * library ({@code libfragstate.so}: decoding, checksums, the noise cipher, the network),
 * RocksDB's ({@code librocksdbjni}), the JVM and its JIT-compiled code, the kernel (the network
 * stack, copies, page cache). That is what tells a CPU-bound restore where to look.
 */
final class RestoreProfile implements AutoCloseable {
    /** " 12.34% |thread name    |shared object" lines of {@code perf report -t '|' --sort comm,dso}. */
    private static final Pattern LINE = Pattern.compile("^\\s*([0-9.]+)%\\s*\\|(.*?)\\s*\\|(.*?)\\s*$");
    /** Sampling frequency per core: enough samples over a few seconds, little overhead. */
    private static final int HZ = 499;

    private final Path data;
    private final Process perf;

    /** Starts sampling every core into {@code dir/perf.data}; fails when perf cannot start. */
    RestoreProfile(Path dir) throws IOException {
        Files.createDirectories(dir);
        this.data = dir.resolve("perf.data");
        this.perf = new ProcessBuilder("perf", "record", "-a", "-F", Integer.toString(HZ), "-o", data.toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("perf-record.log").toFile()).start();
    }

    /**
     * Stops sampling (SIGINT, as perf expects) and returns where the busy samples went: shares of
     * every sample that was not idle ({@code swapper}), by thread name and shared object (rows
     * under 0.5 % of all samples left out, so the shares add up to less than 100) and summed by
     * shared object. JIT-compiled Java code is
     * one object, {@code [JIT]}.
     */
    Map<String, Object> stop(Path repo) throws InterruptedException {
        close();
        return summarize(Shell.run(repo, Map.of(), Duration.ofMinutes(5), List.of("perf", "report", "-i", data.toString(),
                "--stdio", "-t", "|", "--sort", "comm,dso", "--percent-limit", "0.5")));
    }

    /** The figures of {@link #stop} from the text of {@code perf report -t '|' --sort comm,dso}. */
    static Map<String, Object> summarize(String report) {
        List<String[]> rows = new ArrayList<>();
        double idle = 0;
        boolean any = false;
        for (String line : report.split("\\R")) {
            Matcher m = LINE.matcher(line);
            if (line.startsWith("#") || !m.matches()) {
                continue;
            }
            any = true;
            if (m.group(2).strip().equals("swapper")) {
                idle += Double.parseDouble(m.group(1));
                continue;
            }
            String object = m.group(3).replaceAll("^\\[JIT\\] tid \\d+$", "[JIT]").replace(" (deleted)", "");
            rows.add(new String[] {m.group(1), m.group(2).strip(), object});
        }
        // the rows under the report's limit are not listed: busy is everything but idle
        double busy = any ? 100 - idle : 0;
        List<Map<String, Object>> byThread = new ArrayList<>();
        Map<String, Double> byObject = new LinkedHashMap<>();
        for (String[] r : rows) {
            double share = Math.round(1000 * Double.parseDouble(r[0]) / busy) / 10.0;
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("percentOfBusy", share);
            row.put("thread", r[1]);
            row.put("object", r[2]);
            byThread.add(row);
            byObject.merge(r[2], share, Double::sum);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("busyPercentOfAllSamples", Math.round(10 * busy) / 10.0);
        out.put("byThreadAndObject", byThread);
        out.put("byObject", byObject);
        return out;
    }

    @Override
    public void close() throws InterruptedException {
        if (perf.isAlive()) {
            Shell.run(Path.of("."), Map.of(), Duration.ofSeconds(10), List.of("kill", "-INT", Long.toString(perf.pid())));
            if (!perf.waitFor(60, TimeUnit.SECONDS)) {
                perf.destroyForcibly();
            }
        }
    }
}
