package io.fragstate.ysb.generator;

import static org.assertj.core.api.Assertions.assertThat;

import io.fragstate.generator.RateProfile;
import io.fragstate.ysb.AdEvent;
import io.fragstate.ysb.YsbLogic;
import java.util.List;
import org.junit.jupiter.api.Test;

class YsbReferenceTest {
    @Test
    void theCountsAddUpToTheViews_oneLinePerCampaignAndWindow() {
        YsbConfig config = new YsbConfig(3, 1.0, 25, YsbConfig.DEFAULT_START_EPOCH_MS, RateProfile.constant(90), 4, 3);
        long views = 0;
        AdEventGenerator g = new AdEventGenerator(config);
        while (g.hasNext()) {
            views += g.nextAdEvents().stream().filter(YsbLogic::isView).count();
        }
        List<String> lines = YsbReference.expectedCounts(config);
        long counted = lines.stream().mapToLong(l -> Long.parseLong(l.replaceAll(".*\"views\":(\\d+)}", "$1"))).sum();
        assertThat(counted).isEqualTo(views).isPositive();
        // 25 s from an aligned start: windows at +0, +10 and +20 s, for each of the 4 campaigns
        assertThat(lines).hasSize(12).doesNotHaveDuplicates();
        assertThat(lines).allSatisfy(l -> assertThat(l).startsWith("{\"campaign_id\":\""));
    }

    @Test
    void aHandCountedSecond() {
        // one second, 30 events: count its views per campaign by hand from the events themselves
        YsbConfig config = new YsbConfig(11, 1.0, 1, YsbConfig.DEFAULT_START_EPOCH_MS, RateProfile.constant(30), 2, 2);
        CampaignTable table = CampaignTable.of(config);
        java.util.Map<String, Long> byCampaign = new java.util.TreeMap<>();
        for (AdEvent e : new AdEventGenerator(config).nextAdEvents()) {
            if (e.eventType.equals("view")) {
                byCampaign.merge(table.campaignOf(e.adId), 1L, Long::sum);
            }
        }
        List<String> expected = byCampaign.entrySet().stream()
                .map(en -> YsbLogic.formatCount(en.getKey(), config.startEpochMs(), en.getValue())).toList();
        assertThat(YsbReference.expectedCounts(config)).isEqualTo(expected);
    }
}
