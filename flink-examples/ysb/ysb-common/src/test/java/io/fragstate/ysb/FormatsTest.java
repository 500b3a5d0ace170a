package io.fragstate.ysb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class FormatsTest {
    @Test
    void anAdEventSurvivesItsWireFormat_withTheEventTimeAsAString() {
        AdEvent e = new AdEvent("u-1", "p-1", "a-1", "banner", "view", 1_700_000_000_123L, "1.2.3.4");
        String json = e.toJson();
        assertThat(json).contains("\"event_time\":\"1700000000123\"").startsWith("{\"user_id\":\"u-1\"");
        assertThat(AdEvent.parse(json)).isEqualTo(e);
    }

    @Test
    void aNumericEventTimeIsAcceptedToo() {
        assertThat(AdEvent.parse("{\"ad_id\":\"a\",\"event_type\":\"click\",\"event_time\":42}").eventTime).isEqualTo(42);
    }

    @Test
    void malformedEventsAreRejectedNamingTheField() {
        assertThatThrownBy(() -> AdEvent.parse("not json")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not JSON");
        assertThatThrownBy(() -> AdEvent.parse("[1]")).hasMessageContaining("not a JSON object");
        assertThatThrownBy(() -> AdEvent.parse("{\"event_type\":\"view\",\"event_time\":\"1\"}")).hasMessageContaining("'ad_id'");
        assertThatThrownBy(() -> AdEvent.parse("{\"ad_id\":\"a\",\"event_type\":\"view\",\"event_time\":\"12x\"}"))
                .hasMessageContaining("'event_time'");
        assertThatThrownBy(() -> AdEvent.parse("{\"ad_id\":\"a\",\"event_time\":\"1\"}")).hasMessageContaining("'event_type'");
    }

    @Test
    void campaignRowsSurviveTheirWireFormat() {
        CampaignAd c = new CampaignAd("a-1", "c-1");
        assertThat(CampaignAd.parse(c.toJson())).isEqualTo(c);
        assertThatThrownBy(() -> CampaignAd.parse("{\"ad_id\":\"a\"}")).hasMessageContaining("'campaign_id'");
    }

    @Test
    void windowsAreTenSecondsAlignedToTheEpoch() {
        assertThat(YsbLogic.windowStart(1_700_000_009_999L)).isEqualTo(1_700_000_000_000L);
        assertThat(YsbLogic.windowStart(1_700_000_010_000L)).isEqualTo(1_700_000_010_000L);
        assertThat(YsbLogic.windowStart(-1)).isEqualTo(-10_000);
    }

    @Test
    void theCountLineStartsWithTheCampaign_theRecordKeyTheTestsCheck() {
        assertThat(YsbLogic.formatCount("c-1", 10_000, 7)).isEqualTo("{\"campaign_id\":\"c-1\",\"window_start\":10000,\"views\":7}");
    }
}
