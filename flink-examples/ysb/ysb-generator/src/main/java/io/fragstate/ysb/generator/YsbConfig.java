package io.fragstate.ysb.generator;

import io.fragstate.generator.RateProfile;
import io.fragstate.traffic.CliArgs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Set;

/**
 * Everything that determines the generated ad events and campaign table (and therefore the job's
 * expected output). In simulated second {@code t}, {@code round(profile(t) × scale)} events are
 * generated at event times spread evenly over {@code [start + t·1000, start + (t+1)·1000)}: never
 * the wall clock.
 *
 * @param seed            random seed: campaign and ad ids, every event's fields
 * @param scale           events per second = round(profile count × scale)
 * @param durationSeconds simulated seconds
 * @param startEpochMs    event time of simulated second 0
 * @param profile         counts per second ({@code --rate N}: a constant N)
 * @param campaigns       campaigns in the table (original benchmark: 100)
 * @param adsPerCampaign  ads of each campaign (original benchmark: 10)
 */
public record YsbConfig(long seed, double scale, int durationSeconds, long startEpochMs, RateProfile profile,
        int campaigns, int adsPerCampaign) {

    public static final long DEFAULT_START_EPOCH_MS = 1_700_000_000_000L;
    /** The options {@link #fromArgs} reads. */
    public static final Set<String> OPTIONS = Set.of("seed", "scale", "duration-s", "start-epoch-ms", "profile",
            "profile-compression", "rate", "campaigns", "ads-per-campaign");

    public YsbConfig {
        if (!(scale >= 0) || Double.isInfinite(scale)) {
            throw new IllegalArgumentException("--scale must be a non-negative number, got " + scale);
        }
        if (durationSeconds <= 0) {
            throw new IllegalArgumentException("--duration-s must be positive, got " + durationSeconds);
        }
        if (campaigns < 1 || campaigns > 100_000) {
            throw new IllegalArgumentException("--campaigns must be between 1 and 100000, got " + campaigns);
        }
        if (adsPerCampaign < 1 || adsPerCampaign > 1_000) {
            throw new IllegalArgumentException("--ads-per-campaign must be between 1 and 1000, got " + adsPerCampaign);
        }
    }

    /**
     * Reads {@code --seed --scale --duration-s --start-epoch-ms --campaigns --ads-per-campaign} and
     * the rate: {@code --rate N} (events per second, constant) or {@code --profile FILE|daedalus}
     * ({@code second|count}, optionally {@code --profile-compression N}) or by default the
     * generator's built-in profile (300–1,000 per second); either one times {@code --scale}.
     */
    public static YsbConfig fromArgs(CliArgs a) {
        if (a.has("rate") && a.has("profile")) {
            throw new IllegalArgumentException("give --rate or --profile, not both");
        }
        RateProfile profile;
        try {
            profile = a.has("rate") ? RateProfile.constant(a.getInt("rate", 0))
                    : a.has("profile") ? RateProfile.read(Path.of(a.get("profile", ""))) : RateProfile.builtIn();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read --profile: " + e.getMessage(), e);
        }
        profile = profile.compressed(a.getInt("profile-compression", 1));
        return new YsbConfig(a.getLong("seed", 42), a.getDouble("scale", 1.0), a.getInt("duration-s", 120),
                a.getLong("start-epoch-ms", DEFAULT_START_EPOCH_MS), profile, a.getInt("campaigns", 100),
                a.getInt("ads-per-campaign", 10));
    }

    /** Defaults of the original benchmark (100 campaigns × 10 ads) at the built-in profile × {@code scale}. */
    public static YsbConfig defaults(long seed, double scale, int durationSeconds) {
        return new YsbConfig(seed, scale, durationSeconds, DEFAULT_START_EPOCH_MS, RateProfile.builtIn(), 100, 10);
    }

    /** Events generated in simulated second {@code t}. */
    public int eventsIn(int second) {
        return (int) Math.round(profile.count(second) * scale);
    }

    /** Event time of the end-of-input records: a minute past the last second. */
    public long flushEventTimeMs() {
        return startEpochMs + (durationSeconds + 60L) * 1000L;
    }
}
