package io.fragstate.examples.statebench;

import io.fragstate.traffic.CliArgs;
import java.util.Set;

/**
 * The job's command line: how much keyed state ({@code --state-mb} split into keys of
 * {@code --value-bytes} each), how fast the keys are first created ({@code --fill-rate}) and how
 * fast events arrive afterwards ({@code --rate}), how many events in total ({@code --events},
 * unbounded by default) and where the committed output goes ({@code --output}).
 *
 * @param stateMb total size of the values, in MiB
 * @param valueBytes size of one key's value
 * @param fillPerSecond events per second until every key exists; 0 = as fast as the job takes them
 * @param steadyPerSecond events per second afterwards; 0 = as fast as the job takes them
 * @param events total number of events, {@link Long#MAX_VALUE} for unbounded
 * @param output directory or URI of the FileSink
 * @param jobName the Flink job name
 */
public record BenchSettings(long stateMb, int valueBytes, double fillPerSecond, double steadyPerSecond, long events,
                            String output, String jobName) {
    static final Set<String> OPTIONS =
            Set.of("state-mb", "value-bytes", "fill-rate", "rate", "events", "output", "job-name");

    public BenchSettings {
        if (stateMb <= 0) {
            throw new IllegalArgumentException("--state-mb must be positive, got " + stateMb);
        }
        if (valueBytes <= 0 || valueBytes > (64 << 20)) {
            throw new IllegalArgumentException("--value-bytes must be in 1..67108864, got " + valueBytes);
        }
        long keys = (stateMb << 20) / valueBytes;
        if (keys < 1 || keys > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--state-mb / --value-bytes give " + keys + " keys; need 1.." + Integer.MAX_VALUE);
        }
        if (!(fillPerSecond >= 0) || !(steadyPerSecond >= 0)) {
            throw new IllegalArgumentException("--fill-rate and --rate must be >= 0 (0 = unthrottled)");
        }
        if (events <= 0) {
            throw new IllegalArgumentException("--events must be positive, got " + events);
        }
        if (output == null || output.isBlank()) {
            throw new IllegalArgumentException("--output DIR is required (an absolute path or a URI every TaskManager can write)");
        }
    }

    public static BenchSettings parse(String[] args) {
        CliArgs a = CliArgs.parse(args, OPTIONS, Set.of());
        return new BenchSettings(
                a.getLong("state-mb", 300),
                a.getInt("value-bytes", 4096),
                a.getDouble("fill-rate", 50_000),
                a.getDouble("rate", 2_000),
                a.has("events") ? a.getLong("events", 0) : Long.MAX_VALUE,
                a.get("output", ""),
                a.get("job-name", "State Bench"));
    }

    /** Number of keys: state-mb · 2^20 / value-bytes. Event {@code i} goes to key {@code i mod keys}. */
    public int keys() {
        return (int) ((stateMb << 20) / valueBytes);
    }
}
