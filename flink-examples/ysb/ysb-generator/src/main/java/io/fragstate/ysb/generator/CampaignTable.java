package io.fragstate.ysb.generator;

import io.fragstate.generator.EventSource;
import io.fragstate.ysb.CampaignAd;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.UUID;

/**
 * The campaigns and their ads, derived from the seed alone: {@code campaigns × adsPerCampaign}
 * random UUIDs, ad {@code j} of campaign {@code i} in that order. The job learns the table from the
 * campaigns topic, the reference computation from here.
 */
public final class CampaignTable {
    private final Map<String, String> campaignOfAd;
    private final List<String> ads;

    private CampaignTable(Map<String, String> campaignOfAd) {
        this.campaignOfAd = Collections.unmodifiableMap(campaignOfAd);
        this.ads = List.copyOf(campaignOfAd.keySet());
    }

    public static CampaignTable of(YsbConfig config) {
        SplittableRandom random = new SplittableRandom(config.seed());
        Map<String, String> m = new LinkedHashMap<>();
        for (int c = 0; c < config.campaigns(); c++) {
            String campaign = uuid(random);
            for (int a = 0; a < config.adsPerCampaign(); a++) {
                m.put(uuid(random), campaign);
            }
        }
        return new CampaignTable(m);
    }

    /** All ad ids, in table order. */
    public List<String> ads() {
        return ads;
    }

    /** The campaign of {@code adId}, or null for an ad not in the table. */
    public String campaignOf(String adId) {
        return campaignOfAd.get(adId);
    }

    /** The rows as campaigns-topic records: key = ad id, timestamp = {@code timestampMs}. */
    public List<EventSource.Event> records(long timestampMs) {
        List<EventSource.Event> out = new ArrayList<>(campaignOfAd.size());
        campaignOfAd.forEach((ad, campaign) -> out.add(new EventSource.Event(ad, timestampMs, new CampaignAd(ad, campaign).toJson())));
        return out;
    }

    static String uuid(SplittableRandom random) {
        return new UUID(random.nextLong(), random.nextLong()).toString();
    }
}
