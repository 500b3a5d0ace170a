package io.fragstate.ysb;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * One row of the campaign table: which campaign an ad belongs to. On the campaigns topic as
 * {@code {"ad_id":"…","campaign_id":"…"}} with the ad id as record key (the original benchmark
 * keeps the same pairs in Redis). A public-field POJO for Flink's POJO serializer.
 */
public final class CampaignAd {
    public String adId;
    public String campaignId;

    public CampaignAd() {}

    public CampaignAd(String adId, String campaignId) {
        this.adId = adId;
        this.campaignId = campaignId;
    }

    public String toJson() {
        ObjectNode root = Json.newObject();
        root.put("ad_id", adId);
        root.put("campaign_id", campaignId);
        return Json.write(root);
    }

    /** @throws IllegalArgumentException when the text is not such an object */
    public static CampaignAd parse(String json) {
        JsonNode root = Json.object(json);
        return new CampaignAd(Json.requiredText(root, "ad_id", json), Json.requiredText(root, "campaign_id", json));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CampaignAd c && Objects.equals(adId, c.adId) && Objects.equals(campaignId, c.campaignId);
    }

    @Override
    public int hashCode() {
        return Objects.hash(adId, campaignId);
    }

    @Override
    public String toString() {
        return toJson();
    }
}
