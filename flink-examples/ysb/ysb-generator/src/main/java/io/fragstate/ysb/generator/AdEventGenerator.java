package io.fragstate.ysb.generator;

import io.fragstate.generator.EventSource;
import io.fragstate.ysb.AdEvent;
import io.fragstate.ysb.YsbLogic;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Deterministic ad events: in simulated second {@code t}, {@code n = config.eventsIn(t)} events
 * at event times {@code start + t·1000 + i·1000/n}, each with an ad drawn uniformly from the
 * {@link CampaignTable}, an event type drawn uniformly from view/click/purchase, and random
 * user, page, ad type and IP. Second {@code t} draws from its own random stream (seed and t), so
 * any second can be recomputed alone. Record key: the user id.
 */
public final class AdEventGenerator implements EventSource {
    private final YsbConfig config;
    private final List<String> ads;
    private int second;

    public AdEventGenerator(YsbConfig config) {
        this(config, CampaignTable.of(config));
    }

    public AdEventGenerator(YsbConfig config, CampaignTable table) {
        this.config = config;
        this.ads = table.ads();
    }

    @Override
    public int durationSeconds() {
        return config.durationSeconds();
    }

    @Override
    public boolean hasNext() {
        return second < config.durationSeconds();
    }

    @Override
    public int currentSecond() {
        return second;
    }

    /** The ad events of the next second. */
    public List<AdEvent> nextAdEvents() {
        if (!hasNext()) {
            throw new IllegalStateException("simulation finished after " + config.durationSeconds() + " s");
        }
        int n = config.eventsIn(second);
        SplittableRandom random = new SplittableRandom(config.seed() * 0x9E3779B97F4A7C15L + second + 1);
        long base = config.startEpochMs() + second * 1000L;
        List<AdEvent> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(new AdEvent(CampaignTable.uuid(random), CampaignTable.uuid(random), ads.get(random.nextInt(ads.size())),
                    YsbLogic.AD_TYPES[random.nextInt(YsbLogic.AD_TYPES.length)],
                    YsbLogic.EVENT_TYPES[random.nextInt(YsbLogic.EVENT_TYPES.length)], base + i * 1000L / n,
                    random.nextInt(1, 224) + "." + random.nextInt(256) + "." + random.nextInt(256) + "." + random.nextInt(1, 255)));
        }
        second++;
        return out;
    }

    @Override
    public List<Event> nextSecond() {
        return nextAdEvents().stream().map(AdEventGenerator::record).toList();
    }

    @Override
    public Event flushEvent() {
        return record(new AdEvent(YsbLogic.END_OF_INPUT, YsbLogic.END_OF_INPUT, YsbLogic.END_OF_INPUT, YsbLogic.END_OF_INPUT,
                YsbLogic.END_OF_INPUT, config.flushEventTimeMs(), "0.0.0.0"));
    }

    private static Event record(AdEvent e) {
        return new Event(e.userId, e.eventTime, e.toJson());
    }
}
