package io.fragstate.examples.ysb;

import static org.assertj.core.api.Assertions.assertThat;

import io.fragstate.ysb.CampaignAd;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.operators.co.CoBroadcastWithKeyedOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedBroadcastOperatorTestHarness;
import org.apache.flink.streaming.util.ProcessFunctionTestHarnesses;
import org.junit.jupiter.api.Test;

/** The join's ordering guarantee, operator by operator: a view that comes before its campaign row waits for it. */
class CampaignJoinTest {
    private static final KeySelector<AdView, String> BY_AD = v -> v.adId;

    private static KeyedBroadcastOperatorTestHarness<String, AdView, CampaignAd, CampaignView> opened() throws Exception {
        return ProcessFunctionTestHarnesses.forKeyedBroadcastProcessFunction(new CampaignJoin(), BY_AD, Types.STRING,
                CampaignJoin.CAMPAIGNS);
    }

    /** (campaign, timestamp) of every record emitted so far. */
    private static List<String> emitted(KeyedBroadcastOperatorTestHarness<?, ?, ?, CampaignView> h) {
        return h.getOutput().stream().filter(o -> o instanceof StreamRecord).map(o -> {
            @SuppressWarnings("unchecked")
            StreamRecord<CampaignView> r = (StreamRecord<CampaignView>) o;
            assertThat(r.getValue().eventTime).as("the output keeps the view's event time").isEqualTo(r.getTimestamp());
            return r.getValue().campaignId + "@" + r.getTimestamp();
        }).toList();
    }

    @Test
    void aViewOfAKnownAdIsJoinedAtOnce() throws Exception {
        try (var h = opened()) {
            h.processBroadcastElement(new CampaignAd("ad-1", "A"), 0);
            h.processElement(new AdView("ad-1", 1_000), 1_000);
            assertThat(emitted(h)).containsExactly("A@1000");
        }
    }

    @Test
    void aViewBeforeItsRowWaits_untilTheWatermarkSaysTheTableIsComplete() throws Exception {
        try (var h = opened()) {
            h.processElement(new AdView("ad-1", 1_000), 1_000);
            h.processElement(new AdView("ad-1", 1_000), 1_000);
            h.processElement(new AdView("ad-1", 3_000), 3_000);
            h.processElement(new AdView("ad-9", 2_000), 2_000); // in no campaign
            h.processWatermark(5_000); // the views' watermark moves, the table's input has none yet
            assertThat(emitted(h)).isEmpty();
            h.processBroadcastElement(new CampaignAd("ad-1", "A"), 0);
            h.processBroadcastWatermark(Long.MAX_VALUE); // the bounded table source has finished
            assertThat(emitted(h)).containsExactly("A@1000", "A@1000", "A@3000");
            assertThat(h.numEventTimeTimers()).isZero();
        }
    }

    @Test
    void waitingViewsAndTheTableAreInTheCheckpoint() throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = opened()) {
            h.processBroadcastElement(new CampaignAd("ad-2", "B"), 0);
            h.processElement(new AdView("ad-1", 1_000), 1_000);
            snapshot = h.snapshot(1, 1);
        }
        try (var restored = new KeyedBroadcastOperatorTestHarness<>(
                new CoBroadcastWithKeyedOperator<>(new CampaignJoin(), List.of(CampaignJoin.CAMPAIGNS)), BY_AD, Types.STRING, 1, 1, 0)) {
            restored.initializeState(snapshot);
            restored.open();
            restored.processElement(new AdView("ad-2", 1_500), 1_500); // the restored table
            restored.processBroadcastElement(new CampaignAd("ad-1", "A"), 0);
            restored.watermark(2_000);
            assertThat(emitted(restored)).containsExactly("B@1500", "A@1000");
        }
    }
}
