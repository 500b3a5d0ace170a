package io.fragstate.examples.ysb;

import static org.assertj.core.api.Assertions.assertThat;

import io.fragstate.ysb.AdEvent;
import io.fragstate.ysb.CampaignAd;
import io.fragstate.ysb.YsbLogic;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;

/** Runs filter, projection, join and windowed count in a local Flink environment on a tiny bounded input. */
class PipelineLocalTest {
    private static final long T0 = 1_700_000_000_000L; // a window start

    private static AdEvent event(String ad, String type, long t) {
        return new AdEvent("u", "p", ad, "banner", type, t, "1.2.3.4");
    }

    @Test
    void viewsAreCountedPerCampaignAndWindow_otherEventsAndUnknownAdsAreNot() throws Exception {
        List<AdEvent> input = new ArrayList<>();
        for (int s = 0; s < 25; s++) {
            input.add(event("ad-1", "view", T0 + s * 1000 + 100));      // campaign A
            input.add(event("ad-2", "view", T0 + s * 1000 + 200));      // campaign A
            input.add(event("ad-3", s % 2 == 0 ? "view" : "click", T0 + s * 1000 + 300)); // campaign B
            input.add(event("ad-9", "view", T0 + s * 1000 + 400));      // in no campaign
            input.add(event("ad-1", "purchase", T0 + s * 1000 + 500));
        }
        List<CampaignAd> table = List.of(new CampaignAd("ad-1", "A"), new CampaignAd("ad-2", "A"), new CampaignAd("ad-3", "B"));

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        DataStream<AdEvent> events = env.fromData(input).assignTimestampsAndWatermarks(YsbJob.watermarks());
        DataStream<CampaignAd> campaigns = env.fromData(table)
                .assignTimestampsAndWatermarks(WatermarkStrategy.noWatermarks()).setParallelism(1);
        List<String> actual = new ArrayList<>();
        try (CloseableIterator<KeyedCount> it = YsbJob.pipeline(events, campaigns).executeAndCollect()) {
            it.forEachRemaining(c -> {
                assertThat(c.json).startsWith("{\"campaign_id\":\"" + c.campaignId + "\"");
                actual.add(c.json);
            });
        }

        // seconds 0-9, 10-19, 20-24: A sees 2 views a second, B one every other second (even s)
        assertThat(actual).containsExactlyInAnyOrder(
                YsbLogic.formatCount("A", T0, 20), YsbLogic.formatCount("A", T0 + 10_000, 20), YsbLogic.formatCount("A", T0 + 20_000, 10),
                YsbLogic.formatCount("B", T0, 5), YsbLogic.formatCount("B", T0 + 10_000, 5), YsbLogic.formatCount("B", T0 + 20_000, 3));
    }

    @Test
    void malformedRecordsAreDroppedNotFatal() {
        JsonRecordDeserializer<AdEvent> d = new JsonRecordDeserializer<>(AdEvent::parse, AdEvent.class, "malformedEvents");
        assertThat(d.parseOrNull(null)).isNull();
        assertThat(d.parseOrNull("{".getBytes(StandardCharsets.UTF_8))).isNull();
        assertThat(d.parseOrNull(new byte[] {(byte) 0xff, (byte) 0xfe})).isNull();
        assertThat(d.parseOrNull(event("a", "view", 5).toJson().getBytes(StandardCharsets.UTF_8))).isEqualTo(event("a", "view", 5));
    }
}
