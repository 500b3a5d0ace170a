package io.fragstate.examples.statebench;

import io.fragstate.traffic.CliArgs;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;

/**
 * Checks a {@link StateBenchJob} output directory (see {@link OutputCheck}); needs no Flink on the
 * class path. Prints one line: {@code OK: events …, keys …, max index …} and exits 0, or
 * {@code FAILED: <first violation by index> (counts of each kind)} and exits 1; 2 on a usage or
 * I/O error.
 *
 * <pre>
 * java -cp state-bench.jar io.fragstate.examples.statebench.StateBenchCheck DIR [--expect-events N]
 * </pre>
 */
public final class StateBenchCheck {
    private StateBenchCheck() {}

    public static void main(String[] args) {
        int code;
        try {
            if (args.length == 0 || args[0].startsWith("--")) {
                throw new IllegalArgumentException("usage: StateBenchCheck DIR [--expect-events N]");
            }
            CliArgs a = CliArgs.parse(Arrays.copyOfRange(args, 1, args.length), Set.of("expect-events"), Set.of());
            OutputCheck.Result r = OutputCheck.check(Path.of(args[0]), a.getLong("expect-events", -1));
            System.out.println(r.summary());
            code = r.ok() ? 0 : 1;
        } catch (Exception e) {
            System.err.println("StateBenchCheck: " + e.getMessage());
            code = 2;
        }
        System.exit(code);
    }
}
