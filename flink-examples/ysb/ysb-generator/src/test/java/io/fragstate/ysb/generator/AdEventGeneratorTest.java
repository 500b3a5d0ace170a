package io.fragstate.ysb.generator;

import static org.assertj.core.api.Assertions.assertThat;

import io.fragstate.generator.RateProfile;
import io.fragstate.ysb.AdEvent;
import io.fragstate.ysb.CampaignAd;
import io.fragstate.ysb.YsbLogic;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class AdEventGeneratorTest {
    private static final YsbConfig CONFIG = new YsbConfig(7, 1.0, 30, YsbConfig.DEFAULT_START_EPOCH_MS,
            RateProfile.constant(300), 20, 5);

    private static List<AdEvent> all(YsbConfig config) {
        AdEventGenerator g = new AdEventGenerator(config);
        List<AdEvent> out = new ArrayList<>();
        while (g.hasNext()) {
            out.addAll(g.nextAdEvents());
        }
        return out;
    }

    @Test
    void theSameConfigGivesTheSameEvents_anotherSeedOthers() {
        assertThat(all(CONFIG)).isEqualTo(all(CONFIG));
        YsbConfig other = new YsbConfig(8, 1.0, 30, CONFIG.startEpochMs(), CONFIG.profile(), 20, 5);
        assertThat(all(other)).isNotEqualTo(all(CONFIG));
    }

    @Test
    void eachSecondHasItsRate_inEventTimeOrder_withinTheSecond() {
        AdEventGenerator g = new AdEventGenerator(CONFIG);
        for (int s = 0; s < 3; s++) {
            List<AdEvent> second = g.nextAdEvents();
            assertThat(second).hasSize(300);
            long base = CONFIG.startEpochMs() + s * 1000L;
            assertThat(second).allSatisfy(e -> assertThat(e.eventTime).isBetween(base, base + 999));
            for (int i = 1; i < second.size(); i++) {
                assertThat(second.get(i).eventTime).isGreaterThanOrEqualTo(second.get(i - 1).eventTime);
            }
        }
    }

    @Test
    void everyAdIsInTheTable_andEveryEventTypeAppears() {
        CampaignTable table = CampaignTable.of(CONFIG);
        assertThat(table.ads()).hasSize(100).doesNotHaveDuplicates();
        Set<String> types = new HashSet<>();
        for (AdEvent e : all(CONFIG)) {
            assertThat(table.campaignOf(e.adId)).isNotNull();
            types.add(e.eventType);
            assertThat(AdEvent.parse(e.toJson())).isEqualTo(e);
        }
        assertThat(types).containsExactlyInAnyOrder(YsbLogic.EVENT_TYPES);
    }

    @Test
    void theCampaignRecordsAreTheTable() {
        CampaignTable table = CampaignTable.of(CONFIG);
        Map<String, Integer> adsPerCampaign = new HashMap<>();
        table.records(0).forEach(r -> {
            CampaignAd row = CampaignAd.parse(r.json());
            assertThat(r.key()).isEqualTo(row.adId);
            assertThat(table.campaignOf(row.adId)).isEqualTo(row.campaignId);
            adsPerCampaign.merge(row.campaignId, 1, Integer::sum);
        });
        assertThat(adsPerCampaign).hasSize(20).allSatisfy((c, n) -> assertThat(n).isEqualTo(5));
    }

    @Test
    void theEndOfInputRecordIsNoViewAndLiesPastTheLastWindow() {
        AdEvent flush = AdEvent.parse(new AdEventGenerator(CONFIG).flushEvent().json());
        assertThat(YsbLogic.isView(flush)).isFalse();
        long lastEvent = CONFIG.startEpochMs() + CONFIG.durationSeconds() * 1000L;
        assertThat(flush.eventTime).isGreaterThan(YsbLogic.windowStart(lastEvent) + YsbLogic.WINDOW_SIZE_MS
                + YsbLogic.MAX_OUT_OF_ORDERNESS_MS);
    }
}
