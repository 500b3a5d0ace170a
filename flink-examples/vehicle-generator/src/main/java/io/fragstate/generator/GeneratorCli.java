package io.fragstate.generator;

import io.fragstate.traffic.CliArgs;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * The commands every workload generator's command line shares (the vehicle generator's and the
 * Yahoo Streaming Benchmark's): sending with pacing options, creating a topic, printing or writing
 * the expected output.
 */
public final class GeneratorCli {
    /** The options of {@link #producer}. */
    public static final Set<String> PRODUCE_OPTIONS = Set.of("brokers", "topic", "partitions", "speedup", "progress-interval-s");

    private GeneratorCli() {}

    /** {@code --brokers --topic --partitions --speedup --progress-interval-s}; progress lines to {@code err}. */
    public static KafkaEventProducer producer(CliArgs a, String defaultTopic, PrintStream err) {
        return new KafkaEventProducer(a.get("brokers", "localhost:9092"), a.get("topic", defaultTopic), a.getInt("partitions", 4),
                a.getDouble("speedup", 1.0), a.getDouble("progress-interval-s", 5.0), err);
    }

    /** {@code create-topic [--brokers ...] --topic T [--partitions 4]}. */
    public static int createTopic(String[] args, PrintStream err) throws InterruptedException {
        CliArgs a = CliArgs.parse(args, Set.of("brokers", "topic", "partitions"), Set.of());
        if (!a.has("topic")) {
            throw new IllegalArgumentException("create-topic needs --topic");
        }
        new KafkaEventProducer(a.get("brokers", "localhost:9092"), a.get("topic", ""), a.getInt("partitions", 4), 1.0, 5.0, err)
                .ensureTopic();
        return 0;
    }

    /**
     * The expected output: to the file {@code --out} (and a line saying so, as {@code tool: N what
     * written to FILE}) or else to {@code out}.
     */
    public static int expected(List<String> lines, CliArgs a, String tool, String what, PrintStream out, PrintStream err)
            throws IOException {
        if (a.has("out")) {
            Files.write(Path.of(a.get("out", "")), lines, StandardCharsets.UTF_8);
            err.println(tool + ": " + lines.size() + " " + what + " written to " + a.get("out", ""));
        } else {
            lines.forEach(out::println);
        }
        return 0;
    }
}
