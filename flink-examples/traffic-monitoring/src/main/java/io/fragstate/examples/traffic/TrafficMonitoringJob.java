package io.fragstate.examples.traffic;

import io.fragstate.traffic.CliArgs;
import io.fragstate.traffic.TrafficLogic;
import io.fragstate.traffic.VehicleEvent;
import io.fragstate.traffic.WindowSummary;
import java.time.Duration;
import java.util.Properties;
import java.util.Set;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The Daedalus Traffic Monitoring job: JSON vehicle events from Kafka, 2 s bounded
 * out-of-orderness watermarks, a 1,000 m point-of-interest filter, per-vehicle 10 s tumbling
 * event-time windows (offset 1 s) computing the average speed, enrichment with the vehicle type
 * from a reference table, exactly-once Kafka sink.
 *
 * <p>State backend and checkpoint storage are deliberately not set here: they come from the
 * cluster's {@code config.yaml}, which is how fragstate (or any backend) is switched on.
 *
 * <pre>
 * flink run traffic-monitoring.jar [--brokers localhost:9092] [--input-topic ...]
 *     [--output-topic ...] [--group-id ...] [--parallelism N] [--checkpoint-interval-ms 10000]
 *     [--vehicle-registry file:///path/registry.csv] [--transactional-id-prefix ...]
 *     [--transaction-timeout-ms 600000] [--starting-offsets earliest|latest] [--chaining]
 * </pre>
 */
public final class TrafficMonitoringJob {
    static final Set<String> OPTIONS = Set.of("brokers", "input-topic", "output-topic", "group-id", "parallelism",
            "checkpoint-interval-ms", "vehicle-registry", "transactional-id-prefix", "transaction-timeout-ms",
            "starting-offsets", "job-name");
    static final Set<String> FLAGS = Set.of("chaining");

    private TrafficMonitoringJob() {}

    public static void main(String[] args) throws Exception {
        CliArgs a = CliArgs.parse(args, OPTIONS, FLAGS);
        String brokers = a.get("brokers", "localhost:9092");
        String inputTopic = a.get("input-topic", "traffic-monitoring-events");
        String outputTopic = a.get("output-topic", "traffic-monitoring-notifications");
        String groupId = a.get("group-id", "traffic-monitoring");
        String registry = a.get("vehicle-registry", "");
        String txPrefix = a.get("transactional-id-prefix", "traffic-monitoring");
        long txTimeoutMs = a.getLong("transaction-timeout-ms", 600_000);
        long checkpointIntervalMs = a.getLong("checkpoint-interval-ms", 10_000);
        String startingOffsets = a.get("starting-offsets", "earliest");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        if (a.has("parallelism")) {
            env.setParallelism(a.getInt("parallelism", 1));
        }
        if (checkpointIntervalMs > 0) {
            // only the interval: the exactly-once sink commits on checkpoints. 0 = take it from the cluster config.
            env.enableCheckpointing(checkpointIntervalMs);
        }
        if (!a.flag("chaining")) {
            env.disableOperatorChaining(); // as in the Daedalus experiments
        }

        KafkaSource<VehicleEvent> source = KafkaSource.<VehicleEvent>builder()
                .setBootstrapServers(brokers)
                .setTopics(inputTopic)
                .setGroupId(groupId)
                .setStartingOffsets(startingOffsets(startingOffsets))
                .setDeserializer(new VehicleEventDeserializer())
                .build();

        Properties producerConfig = new Properties();
        producerConfig.setProperty("transaction.timeout.ms", Long.toString(txTimeoutMs));
        KafkaSink<KeyedNotification> sink = KafkaSink.<KeyedNotification>builder()
                .setBootstrapServers(brokers)
                .setKafkaProducerConfig(producerConfig)
                .setRecordSerializer(new NotificationSerializer(outputTopic))
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(txPrefix)
                .build();

        DataStream<VehicleEvent> events = env
                .fromSource(source, watermarks(), "vehicle-events")
                .uid("vehicle-events-source");
        pipeline(events, registry).sinkTo(sink).name("notifications-sink").uid("notifications-sink");

        env.execute(a.get("job-name", "Traffic Monitoring"));
    }

    /** 2 s bounded out-of-orderness on the event's {@code ts}. */
    static WatermarkStrategy<VehicleEvent> watermarks() {
        return WatermarkStrategy.<VehicleEvent>forBoundedOutOfOrderness(
                        Duration.ofMillis(TrafficLogic.MAX_OUT_OF_ORDERNESS_MS))
                .withTimestampAssigner((event, recordTs) -> event.ts);
    }

    /** Filter, window, enrich: everything between source and sink (also used by the tests). */
    static DataStream<KeyedNotification> pipeline(DataStream<VehicleEvent> events, String registryUri) {
        return events
                .filter(new PointOfInterestFilter()).name("poi-filter").uid("poi-filter")
                .keyBy(new PlateKey())
                .window(TumblingEventTimeWindows.of(
                        Duration.ofMillis(TrafficLogic.WINDOW_SIZE_MS), Duration.ofMillis(TrafficLogic.WINDOW_OFFSET_MS)))
                .process(new AverageSpeed()).name("average-speed-window").uid("average-speed-window")
                .map(new VehicleTypeEnricher(registryUri)).name("vehicle-type-enrichment").uid("vehicle-type-enrichment");
    }

    private static OffsetsInitializer startingOffsets(String which) {
        switch (which) {
            case "earliest":
                return OffsetsInitializer.earliest();
            case "latest":
                return OffsetsInitializer.latest();
            default:
                throw new IllegalArgumentException("--starting-offsets must be 'earliest' or 'latest', got '" + which + "'");
        }
    }

    /** Keeps events within 1,000 m (WGS84 geodesic) of the point of interest. */
    static final class PointOfInterestFilter implements FilterFunction<VehicleEvent> {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean filter(VehicleEvent e) {
            return TrafficLogic.inPointOfInterest(e.lat, e.lon);
        }
    }

    static final class PlateKey implements KeySelector<VehicleEvent, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public String getKey(VehicleEvent e) {
            return e.lp;
        }
    }

    /** Average speed of one vehicle over one window; the arithmetic lives in {@link TrafficLogic}. */
    static final class AverageSpeed extends ProcessWindowFunction<VehicleEvent, WindowSummary, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(String lp, Context ctx, Iterable<VehicleEvent> events, Collector<WindowSummary> out) {
            out.collect(TrafficLogic.summarize(lp, ctx.window().getEnd(), events));
        }
    }
}
