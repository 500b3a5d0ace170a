package io.fragstate.examples.ysb;

import io.fragstate.traffic.CliArgs;
import io.fragstate.ysb.AdEvent;
import io.fragstate.ysb.CampaignAd;
import io.fragstate.ysb.YsbLogic;
import java.time.Duration;
import java.util.Properties;
import java.util.Set;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;

/**
 * The Yahoo Streaming Benchmark job: JSON ad events from Kafka → keep {@code view} events →
 * project ad id and event time → join each ad with its campaign → count views per campaign in 10 s
 * tumbling event-time windows → exactly-once Kafka sink, one record per campaign and window.
 *
 * <p>The join: the original benchmark looks every ad up in Redis. Here the campaign table comes from
 * a Kafka topic (written once before the job starts, read by a bounded source) and is broadcast to
 * every join subtask, which keeps it in <i>broadcast state</i>: the table is part of every
 * checkpoint, so a restored subtask has it without an external service, and what fragstate
 * recovers is the whole job state. Views of an ad whose row has not arrived yet wait in keyed state
 * until the watermark passes them — the watermark cannot advance before the bounded table source
 * has finished — so no view is lost to the order in which the two sources start.
 *
 * <p>State backend and checkpoint storage are deliberately not set here: they come from the
 * cluster's {@code config.yaml}.
 *
 * <pre>
 * flink run ysb-job.jar [--brokers localhost:9092] [--input-topic ysb-events] [--campaigns-topic ysb-campaigns]
 *     [--output-topic ysb-campaign-counts] [--group-id ysb] [--parallelism N] [--checkpoint-interval-ms 10000]
 *     [--transactional-id-prefix ysb] [--transaction-timeout-ms 600000] [--starting-offsets earliest|latest]
 *     [--job-name ...]
 * </pre>
 */
public final class YsbJob {
    static final Set<String> OPTIONS = Set.of("brokers", "input-topic", "campaigns-topic", "output-topic", "group-id",
            "parallelism", "checkpoint-interval-ms", "transactional-id-prefix", "transaction-timeout-ms",
            "starting-offsets", "job-name");

    private YsbJob() {}

    public static void main(String[] args) throws Exception {
        CliArgs a = CliArgs.parse(args, OPTIONS, Set.of());
        String brokers = a.get("brokers", "localhost:9092");
        String groupId = a.get("group-id", "ysb");
        long checkpointIntervalMs = a.getLong("checkpoint-interval-ms", 10_000);

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        if (a.has("parallelism")) {
            env.setParallelism(a.getInt("parallelism", 1));
        }
        if (checkpointIntervalMs > 0) {
            // only the interval: the exactly-once sink commits on checkpoints. 0 = take it from the cluster config.
            env.enableCheckpointing(checkpointIntervalMs);
        }

        KafkaSource<AdEvent> eventSource = KafkaSource.<AdEvent>builder()
                .setBootstrapServers(brokers)
                .setTopics(a.get("input-topic", "ysb-events"))
                .setGroupId(groupId)
                .setStartingOffsets(startingOffsets(a.get("starting-offsets", "earliest")))
                .setDeserializer(new JsonRecordDeserializer<>(AdEvent::parse, AdEvent.class, "malformedEvents"))
                .build();
        // the table as it is when the job starts: a bounded source that finishes once it has read it
        KafkaSource<CampaignAd> campaignSource = KafkaSource.<CampaignAd>builder()
                .setBootstrapServers(brokers)
                .setTopics(a.get("campaigns-topic", "ysb-campaigns"))
                .setGroupId(groupId + "-campaigns")
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(OffsetsInitializer.latest())
                .setDeserializer(new JsonRecordDeserializer<>(CampaignAd::parse, CampaignAd.class, "malformedCampaigns"))
                .build();

        Properties producerConfig = new Properties();
        producerConfig.setProperty("transaction.timeout.ms", Long.toString(a.getLong("transaction-timeout-ms", 600_000)));
        KafkaSink<KeyedCount> sink = KafkaSink.<KeyedCount>builder()
                .setBootstrapServers(brokers)
                .setKafkaProducerConfig(producerConfig)
                .setRecordSerializer(new KeyedCountSerializer(a.get("output-topic", "ysb-campaign-counts")))
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(a.get("transactional-id-prefix", "ysb"))
                .build();

        DataStream<AdEvent> events = env.fromSource(eventSource, watermarks(), "ad-events").uid("ad-events-source");
        DataStream<CampaignAd> campaigns = env
                .fromSource(campaignSource, WatermarkStrategy.noWatermarks(), "campaigns").uid("campaigns-source")
                .setParallelism(1);
        pipeline(events, campaigns).sinkTo(sink).name("counts-sink").uid("counts-sink");

        env.execute(a.get("job-name", "Yahoo Streaming Benchmark"));
    }

    /** Bounded out-of-orderness on the event's {@code event_time}. */
    static WatermarkStrategy<AdEvent> watermarks() {
        return WatermarkStrategy.<AdEvent>forBoundedOutOfOrderness(Duration.ofMillis(YsbLogic.MAX_OUT_OF_ORDERNESS_MS))
                .withTimestampAssigner((event, recordTs) -> event.eventTime);
    }

    /** Filter, projection, join and windowed count: everything between the sources and the sink (also used by the tests). */
    static DataStream<KeyedCount> pipeline(DataStream<AdEvent> events, DataStream<CampaignAd> campaigns) {
        DataStream<AdView> views = events
                .filter(YsbLogic::isView).name("view-filter").uid("view-filter")
                .map(e -> new AdView(e.adId, e.eventTime)).returns(AdView.class).name("projection").uid("projection");
        return views
                .keyBy(v -> v.adId, Types.STRING)
                .connect(campaigns.broadcast(CampaignJoin.CAMPAIGNS))
                .process(new CampaignJoin()).name("campaign-join").uid("campaign-join")
                .keyBy(v -> v.campaignId, Types.STRING)
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(YsbLogic.WINDOW_SIZE_MS)))
                .aggregate(new CountViews(), new CountViews.Emit()).name("campaign-window-count").uid("campaign-window-count");
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
}
