package io.fragstate.generator;

import io.fragstate.traffic.CliArgs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * Everything that determines the generated events (and therefore the job's expected output).
 * Event times are {@code startEpochMs + second * 1000 + per-vehicle phase}: never the wall clock.
 *
 * @param seed            random seed: plates, types, start nodes, routes, speeds, phases
 * @param scale           rate scale factor: active vehicles = round(profile count * scale)
 * @param durationSeconds simulated seconds to generate
 * @param startEpochMs    event time of simulated second 0
 * @param graph           road network
 * @param profile         active vehicles per second
 */
public record GeneratorConfig(long seed, double scale, int durationSeconds, long startEpochMs, RoadGraph graph,
        RateProfile profile) {

    public static final long DEFAULT_START_EPOCH_MS = 1_700_000_000_000L;

    public GeneratorConfig {
        if (!(scale >= 0) || Double.isInfinite(scale)) {
            throw new IllegalArgumentException("--scale must be a non-negative number, got " + scale);
        }
        if (durationSeconds <= 0) {
            throw new IllegalArgumentException("--duration-s must be positive, got " + durationSeconds);
        }
    }

    /**
     * Reads {@code --seed --scale --duration-s --start-epoch-ms --graph --profile
     * --profile-compression} ({@code --profile daedalus}: the embedded Daedalus profile;
     * {@code --profile-compression N}: its time axis squeezed N times, see {@link RateProfile#compressed}).
     */
    public static GeneratorConfig fromArgs(CliArgs a) {
        try {
            RoadGraph graph = a.has("graph") ? RoadGraph.read(Path.of(a.get("graph", ""))) : RoadGraph.builtIn();
            RateProfile profile = a.has("profile") ? RateProfile.read(Path.of(a.get("profile", ""))) : RateProfile.builtIn();
            profile = profile.compressed(a.getInt("profile-compression", 1));
            return new GeneratorConfig(a.getLong("seed", 42), a.getDouble("scale", 0.1), a.getInt("duration-s", 120),
                    a.getLong("start-epoch-ms", DEFAULT_START_EPOCH_MS), graph, profile);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read --graph/--profile: " + e.getMessage(), e);
        }
    }

    public static GeneratorConfig defaults(long seed, double scale, int durationSeconds) {
        return new GeneratorConfig(seed, scale, durationSeconds, DEFAULT_START_EPOCH_MS, RoadGraph.builtIn(),
                RateProfile.builtIn());
    }

    /** Event time of the end-of-input events sent to every partition after the last second. */
    public long flushEventTimeMs() {
        return startEpochMs + (durationSeconds + 60L) * 1000L;
    }
}
