package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class TuneMetricsScrapeTest {
    private static final String TEXT = """
            # HELP fragstate_tune_interval_seconds Checkpoint interval in force.
            # TYPE fragstate_tune_interval_seconds gauge
            # UNIT fragstate_tune_interval_seconds seconds
            fragstate_tune_interval_seconds 40.0
            fragstate_tune_candidate_score{interval="10"} 0.41
            fragstate_tune_checkpoints_triggered_total 12
            fragstate_tune_checkpoints_triggered_created 1.7e9
            # EOF
            """;

    @Test
    void readsTheUnlabelledSampleOfExactlyThatName() {
        assertThat(TuneMetricsScrape.value(TEXT, "fragstate_tune_interval_seconds")).isEqualTo(40.0);
        assertThat(TuneMetricsScrape.value(TEXT, "fragstate_tune_checkpoints_triggered_total")).isEqualTo(12.0);
    }

    @Test
    void aMissingSampleIsNamed() {
        assertThatThrownBy(() -> TuneMetricsScrape.value(TEXT, "fragstate_tune_candidate_score"))
                .hasMessageContaining("fragstate_tune_candidate_score");
    }
}
