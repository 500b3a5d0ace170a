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
    /** "  12.34%  java  libfragstate.so" lines of {@code perf report --sort comm,dso}. */
    private static final Pattern LINE = Pattern.compile("^\\s*([0-9.]+)%\\s+(\\S+)\\s+(.+?)\\s*$");
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

    /** Stops sampling (SIGINT, as perf expects) and returns the shares of the samples by process and by object. */
    Map<String, Object> stop(Path repo) throws InterruptedException {
        close();
        String report = Shell.run(repo, Map.of(), Duration.ofMinutes(5), List.of("perf", "report", "-i", data.toString(),
                "--stdio", "--sort", "comm,dso", "--percent-limit", "1"));
        List<Map<String, Object>> rows = new ArrayList<>();
        Map<String, Double> byObject = new LinkedHashMap<>();
        for (String line : report.split("\\R")) {
            Matcher m = LINE.matcher(line);
            if (!line.startsWith("#") && m.matches()) {
                double share = Double.parseDouble(m.group(1));
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("percent", share);
                r.put("process", m.group(2));
                r.put("object", m.group(3));
                rows.add(r);
                byObject.merge(m.group(3), share, Double::sum);
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("byProcessAndObject", rows);
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
