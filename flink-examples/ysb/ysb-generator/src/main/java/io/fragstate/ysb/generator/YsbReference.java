package io.fragstate.ysb.generator;

import io.fragstate.ysb.AdEvent;
import io.fragstate.ysb.YsbLogic;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The reference computation: the exact result lines the YSB job commits for the events {@link
 * AdEventGenerator} produces, computed without Flink: keep views, look each ad up in the {@link
 * CampaignTable}, count per (campaign, 10 s window), one line per pair with at least one view.
 */
public final class YsbReference {
    private YsbReference() {}

    public static List<String> expectedCounts(YsbConfig config) {
        CampaignTable table = CampaignTable.of(config);
        AdEventGenerator events = new AdEventGenerator(config, table);
        Map<String, Map<Long, Long>> counts = new TreeMap<>();
        while (events.hasNext()) {
            for (AdEvent e : events.nextAdEvents()) {
                String campaign = YsbLogic.isView(e) ? table.campaignOf(e.adId) : null;
                if (campaign != null) {
                    counts.computeIfAbsent(campaign, c -> new TreeMap<>()).merge(YsbLogic.windowStart(e.eventTime), 1L, Long::sum);
                }
            }
        }
        List<String> out = new ArrayList<>();
        counts.forEach((campaign, windows) -> windows.forEach((start, n) -> out.add(YsbLogic.formatCount(campaign, start, n))));
        return out;
    }
}
