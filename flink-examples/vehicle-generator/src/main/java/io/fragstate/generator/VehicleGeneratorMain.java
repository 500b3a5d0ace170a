package io.fragstate.generator;

import io.fragstate.traffic.CliArgs;
import io.fragstate.traffic.VehicleRegistry;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * Command line of the vehicle generator.
 *
 * <pre>
 * java -jar vehicle-generator-all.jar produce  [--brokers localhost:9092] [--topic traffic-monitoring-events]
 *          [--partitions 4] [--speedup 1] [--progress-interval-s 5] [--registry-out registry.csv] SIMULATION
 * java -jar vehicle-generator-all.jar expected [--out expected.jsonl] SIMULATION
 * java -jar vehicle-generator-all.jar registry [--out registry.csv] SIMULATION
 * java -jar vehicle-generator-all.jar create-topic [--brokers ...] --topic T [--partitions 4]
 *
 * SIMULATION = [--seed 42] [--scale 0.1] [--duration-s 120] [--start-epoch-ms 1700000000000]
 *              [--graph berlin-mitte.json] [--profile tm_6h_100K_max.csv|daedalus] [--profile-compression N]
 * </pre>
 *
 * {@code expected} prints (or writes) the reference computation: the exact notifications the
 * Traffic Monitoring job emits for the events {@code produce} sends with the same SIMULATION.
 */
public final class VehicleGeneratorMain {
    private static final Set<String> SIMULATION = Set.of("seed", "scale", "duration-s", "start-epoch-ms", "graph", "profile", "profile-compression");

    private VehicleGeneratorMain() {}

    public static void main(String[] args) {
        CliArgs.runMain("vehicle-generator", () -> run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        if (args.length == 0 || args[0].startsWith("-")) {
            err.println("usage: vehicle-generator produce|expected|registry|create-topic [options]  (see the class documentation)");
            return 2;
        }
        String cmd = args[0];
        String[] rest = java.util.Arrays.copyOfRange(args, 1, args.length);
        Set<String> known = new HashSet<>(SIMULATION);
        switch (cmd) {
            case "produce": {
                known.addAll(GeneratorCli.PRODUCE_OPTIONS);
                known.add("registry-out");
                CliArgs a = CliArgs.parse(rest, known, Set.of());
                GeneratorConfig config = GeneratorConfig.fromArgs(a);
                if (a.has("registry-out")) {
                    writeRegistry(TrafficSimulator.registryFor(config), Path.of(a.get("registry-out", "")));
                }
                GeneratorCli.producer(a, "traffic-monitoring-events", err).run(config);
                return 0;
            }
            case "expected": {
                known.add("out");
                CliArgs a = CliArgs.parse(rest, known, Set.of());
                return GeneratorCli.expected(ReferenceModel.expectedNotifications(GeneratorConfig.fromArgs(a)), a,
                        "vehicle-generator", "expected notifications", out, err);
            }
            case "registry": {
                known.add("out");
                CliArgs a = CliArgs.parse(rest, known, Set.of());
                VehicleRegistry r = TrafficSimulator.registryFor(GeneratorConfig.fromArgs(a));
                if (a.has("out")) {
                    writeRegistry(r, Path.of(a.get("out", "")));
                } else {
                    Writer w = new java.io.OutputStreamWriter(out, StandardCharsets.UTF_8);
                    r.write(w);
                }
                return 0;
            }
            case "create-topic":
                return GeneratorCli.createTopic(rest, err);
            default:
                err.println("unknown command '" + cmd + "': use produce, expected, registry or create-topic");
                return 2;
        }
    }

    public static void writeRegistry(VehicleRegistry r, Path file) throws IOException {
        try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            r.write(w);
        }
    }
}
