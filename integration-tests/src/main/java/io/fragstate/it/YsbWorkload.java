package io.fragstate.it;

import io.fragstate.generator.EventSource;
import io.fragstate.generator.RateProfile;
import io.fragstate.ysb.generator.AdEventGenerator;
import io.fragstate.ysb.generator.YsbConfig;
import io.fragstate.ysb.generator.YsbGeneratorMain;
import io.fragstate.ysb.generator.YsbReference;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The Yahoo Streaming Benchmark job: 100 campaigns × 10 ads, {@code round(profile × scale)} ad
 * events per simulated second (the generator's built-in profile unless the simulation names one);
 * its reference table is the campaigns topic, written before the job starts.
 */
final class YsbWorkload implements Workload {
    static final String CAMPAIGNS_TOPIC = "ysb-campaigns";

    @Override
    public String name() {
        return "ysb";
    }

    @Override
    public Path jobJar(Path repo) {
        return Artifacts.ysbJobJar(repo);
    }

    @Override
    public String inputTopic() {
        return "ysb-events";
    }

    @Override
    public String outputTopic() {
        return "ysb-campaign-counts";
    }

    @Override
    public String keyField() {
        return "campaign_id";
    }

    /**
     * The built-in profile at scale 1 (~650-750 ad events per simulated second, a third of them
     * views), 70 simulated seconds in ~47 s: 7 windows × 100 campaigns (the kill comes after
     * simulated second 30).
     */
    @Override
    public Scenario.Simulation defaultSimulation() {
        return new Scenario.Simulation(42, 1.0, 70, 1.5);
    }

    @Override
    public List<String> expected(Scenario.Simulation sim) {
        return YsbReference.expectedCounts(config(sim));
    }

    @Override
    public EventSource events(Scenario.Simulation sim) {
        return new AdEventGenerator(config(sim));
    }

    @Override
    public void prepare(Scenario.Simulation sim, Path runDir, String brokers) throws Exception {
        YsbGeneratorMain.sendCampaigns(config(sim), brokers, CAMPAIGNS_TOPIC, new PrintStream(System.out, true));
    }

    @Override
    public List<String> jobArguments(Path runDir) {
        return List.of("--campaigns-topic", CAMPAIGNS_TOPIC);
    }

    static YsbConfig config(Scenario.Simulation sim) {
        RateProfile profile;
        try {
            profile = sim.profile() == null ? RateProfile.builtIn() : RateProfile.read(Path.of(sim.profile()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the rate profile " + sim.profile() + ": " + e.getMessage(), e);
        }
        return new YsbConfig(sim.seed(), sim.scale(), sim.durationSeconds(), YsbConfig.DEFAULT_START_EPOCH_MS,
                profile.compressed(sim.profileCompression()), 100, 10);
    }
}
