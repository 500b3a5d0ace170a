package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class TuneEvalPlanTest {
    private static final Path REPO = Path.of("/repo");

    @Test
    void defaultsCompressTheWholeDaedalusProfileIntoTheRun() {
        TuneEvalPlan p = TuneEvalPlan.parse(new String[] {"--mode", "fixed:30", "--out", "/tmp/x"}, REPO);
        assertThat(p.fixedIntervalS()).isEqualTo(30);
        assertThat(p.configuredIntervalS()).isEqualTo(30);
        assertThat(p.compression()).isEqualTo(42); // 25,000 s into 600 s
        assertThat(p.out()).isEqualTo(Path.of("/tmp/x/fixed-30s"));
        assertThat(p.killSeconds()).hasSize(3).allMatch(s -> s >= 90 && s <= 450);
        assertThat(p.maxLatencyMs()).isEqualTo(1000.0);
        assertThat(p.maxRecoveryS()).isEqualTo(120.0);
    }

    @Test
    void theControllerRunsWithTheFallbackIntervalAndNeedsExperiments() {
        TuneEvalPlan p = TuneEvalPlan.parse(new String[] {"--mode", "controller", "--experiments", "e.json"}, REPO);
        assertThat(p.configuredIntervalS()).isEqualTo(TuneEvalPlan.FALLBACK_INTERVAL_S);
        assertThat(p.killSeconds()).isEqualTo(TuneEvalPlan.parse(new String[] {"--mode", "fixed:10"}, REPO).killSeconds());
        assertThatThrownBy(() -> TuneEvalPlan.parse(new String[] {"--mode", "controller"}, REPO))
                .hasMessageContaining("--experiments");
        assertThat(TuneEvalPlan.parse(new String[] {"--mode", "experiments"}, REPO).killSeconds()).isEmpty();
        // a 3-minute run (the CI variant) has room for one kill, at 90 s
        assertThat(TuneEvalPlan.parse(new String[] {"--mode", "controller", "--experiments", "e.json", "--minutes", "3",
                "--kills", "1"}, REPO).killSeconds()).containsExactly(90);
    }

    @Test
    void theControllerIsToldTheRunsOwnFailureRateUnlessItRunsKhaosObjective() {
        String[] controller = {"--mode", "controller", "--experiments", "e.json", "--minutes", "8", "--kills", "3"};
        assertThat(TuneEvalPlan.parse(controller, REPO).mtbfS()).hasValue(160);
        String[] khaos = {"--mode", "controller", "--experiments", "e.json", "--objective", "khaos"};
        assertThat(TuneEvalPlan.parse(khaos, REPO).mtbfS()).isEmpty();
        assertThat(TuneEvalPlan.parse(new String[] {"--mode", "controller", "--experiments", "e.json", "--kills", "0"}, REPO)
                .mtbfS()).isEmpty();
        assertThatThrownBy(() -> TuneEvalPlan.parse(new String[] {"--mode", "controller", "--experiments", "e.json",
                "--objective", "cheapest"}, REPO)).hasMessageContaining("time-lost or khaos, got 'cheapest'");
    }

    @Test
    void aCheckpointBudgetIsPlannedOverTheExperimentsInputRate(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        String[] budget = {"--mode", "controller", "--experiments", dir.resolve("experiments.json").toString(),
                "--checkpoint-budget", "0.004", "--candidates", "10,60,300"};
        TuneEvalPlan p = TuneEvalPlan.parse(budget, REPO);
        assertThat(p.checkpointBudget()).isEqualTo(0.004);
        assertThat(p.candidates()).isEqualTo("10,60,300");
        assertThat(p.loadProfile()).isEqualTo(dir.resolve("latency.csv"));
        java.nio.file.Files.writeString(p.loadProfile(), "second,records,latency_ms,input_events_per_s\n0,0,NaN,271\n1,5,300.0,1200\n");
        assertThat(TuneEvalLoop.loadProfileJson(p.loadProfile())).isEqualTo("[271,1200]");
        java.nio.file.Files.writeString(p.loadProfile(), "second,records\n0,0\n");
        assertThatThrownBy(() -> TuneEvalLoop.loadProfileJson(p.loadProfile())).hasMessageContaining("input_events_per_s");
        // the experiments played the profile compressed 53 times, this 10-minute run 42 times
        java.nio.file.Files.writeString(dir.resolve("summary.json"), "{\"plan\": {\"compression\": 53}}");
        assertThat(TuneEvalLoop.loadProfilePeriodS(p)).isCloseTo(53.0 / 42, org.assertj.core.api.Assertions.within(1e-9));
        assertThat(TuneEvalPlan.parse(new String[] {"--mode", "fixed:10"}, REPO).checkpointBudget()).isZero();
        assertThatThrownBy(() -> TuneEvalPlan.parse(new String[] {"--mode", "controller", "--experiments", "e.json",
                "--checkpoint-budget", "2"}, REPO)).hasMessageContaining("(0, 1]").hasMessageContaining("got 2.0");
        assertThatThrownBy(() -> TuneEvalPlan.parse(new String[] {"--mode", "controller", "--experiments", "e.json",
                "--checkpoint-budget", "0.01", "--objective", "khaos"}, REPO)).hasMessageContaining("time-lost");
        assertThatThrownBy(() -> TuneEvalPlan.parse(new String[] {"--mode", "controller", "--experiments", "e.json",
                "--candidates", "10,x"}, REPO)).hasMessageContaining("--candidates").hasMessageContaining("'x'");
    }

    @Test
    void badValuesAreRefusedNamingTheValueAndTheRange() {
        assertThatThrownBy(() -> TuneEvalPlan.parse(new String[] {"--mode", "fixed:0"}, REPO)).hasMessageContaining("'0'");
        assertThatThrownBy(() -> TuneEvalPlan.parse(new String[] {"--mode", "sometimes"}, REPO))
                .hasMessageContaining("fixed:SECONDS, controller or experiments, got 'sometimes'");
        assertThatThrownBy(() -> TuneEvalPlan.parse(new String[] {"--mode", "fixed:10", "--minutes", "60"}, REPO))
                .hasMessageContaining("between 3 and 40, got 60");
        assertThatThrownBy(() -> TuneEvalPlan.parse(new String[] {"--mode", "fixed:10", "--minutes", "3", "--kills", "2"}, REPO))
                .hasMessageContaining("do not fit");
    }
}
