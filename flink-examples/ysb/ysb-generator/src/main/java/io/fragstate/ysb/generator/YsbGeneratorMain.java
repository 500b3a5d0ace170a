package io.fragstate.ysb.generator;

import io.fragstate.generator.GeneratorCli;
import io.fragstate.generator.KafkaEventProducer;
import io.fragstate.traffic.CliArgs;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * Command line of the Yahoo Streaming Benchmark generator.
 *
 * <pre>
 * java -jar ysb-generator-all.jar campaigns [--brokers localhost:9092] [--topic ysb-campaigns] SIMULATION
 * java -jar ysb-generator-all.jar produce   [--brokers localhost:9092] [--topic ysb-events] [--partitions 4]
 *          [--speedup 1] [--progress-interval-s 5] SIMULATION
 * java -jar ysb-generator-all.jar expected  [--out expected.jsonl] SIMULATION
 * java -jar ysb-generator-all.jar create-topic [--brokers ...] --topic T [--partitions 4]
 *
 * SIMULATION = [--seed 42] [--duration-s 120] [--rate N | --profile FILE|daedalus [--profile-compression N]]
 *              [--scale 1] [--campaigns 100] [--ads-per-campaign 10] [--start-epoch-ms 1700000000000]
 * </pre>
 *
 * {@code campaigns} writes the campaign table (the job's join input; one partition) and must run
 * before the job starts; {@code expected} prints (or writes) the exact counts the job commits for
 * the events {@code produce} sends with the same SIMULATION.
 */
public final class YsbGeneratorMain {
    private YsbGeneratorMain() {}

    public static void main(String[] args) {
        CliArgs.runMain("ysb-generator", () -> run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        if (args.length == 0 || args[0].startsWith("-")) {
            err.println("usage: ysb-generator campaigns|produce|expected|create-topic [options]  (see the class documentation)");
            return 2;
        }
        String cmd = args[0];
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        Set<String> known = new HashSet<>(YsbConfig.OPTIONS);
        switch (cmd) {
            case "campaigns": {
                known.addAll(Set.of("brokers", "topic"));
                CliArgs a = CliArgs.parse(rest, known, Set.of());
                YsbConfig config = YsbConfig.fromArgs(a);
                String topic = a.get("topic", "ysb-campaigns");
                sendCampaigns(config, a.get("brokers", "localhost:9092"), topic, err);
                return 0;
            }
            case "produce": {
                known.addAll(GeneratorCli.PRODUCE_OPTIONS);
                CliArgs a = CliArgs.parse(rest, known, Set.of());
                GeneratorCli.producer(a, "ysb-events", err).run(new AdEventGenerator(YsbConfig.fromArgs(a)), second -> { });
                return 0;
            }
            case "expected": {
                known.add("out");
                CliArgs a = CliArgs.parse(rest, known, Set.of());
                return GeneratorCli.expected(YsbReference.expectedCounts(YsbConfig.fromArgs(a)), a, "ysb-generator",
                        "expected counts", out, err);
            }
            case "create-topic":
                return GeneratorCli.createTopic(rest, err);
            default:
                err.println("unknown command '" + cmd + "': use campaigns, produce, expected or create-topic");
                return 2;
        }
    }

    /**
     * The campaign table to {@code topic} (created with one partition: the job reads it with one
     * bounded source reader). Sending it twice is harmless: the job's join keeps the last row per ad.
     */
    public static void sendCampaigns(YsbConfig config, String brokers, String topic, PrintStream progress)
            throws InterruptedException {
        CampaignTable table = CampaignTable.of(config);
        new KafkaEventProducer(brokers, topic, 1, 1.0, 5.0, progress).sendAll(table.records(config.startEpochMs()));
        progress.println("ysb-generator: " + table.ads().size() + " ads of " + config.campaigns() + " campaigns written to " + topic);
    }
}
