package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class LoadBandTest {
    @Test
    void everyIntervalMeetsBothBandsWithinTwoRounds() {
        int intervals = 4;
        for (int i = 0; i < intervals; i++) {
            assertThat(List.of(LoadBand.of(i, intervals), LoadBand.of(i + intervals, intervals)))
                    .containsExactlyInAnyOrder(LoadBand.HIGH, LoadBand.LOW);
        }
        assertThat(LoadBand.of(0, intervals)).isEqualTo(LoadBand.HIGH);
        assertThat(LoadBand.of(1, intervals)).isEqualTo(LoadBand.LOW);
    }

    @Test
    void aKillAimsAtTheFirstSecondWhoseWindowIsInTheBandJudgedAgainstTheRunsPeak() {
        List<Double> load = List.of(0.0, 100.0, 600.0, 1000.0, 200.0, 700.0);
        // window 1: the second before s
        assertThat(LoadBand.LOW.aim(load, 3, 6, 1)).isEqualTo(5);
        assertThat(LoadBand.LOW.aim(load, 3, 4, 1)).isEqualTo(-1);
        assertThat(LoadBand.HIGH.aim(load, 5, 6, 1)).isEqualTo(6);
        assertThat(LoadBand.HIGH.aim(load, 5, 99, 1)).isEqualTo(6);
        // window 2: a high second after a low one is not a high window
        assertThat(LoadBand.HIGH.aim(load, 0, 6, 2)).isEqualTo(4);
        assertThat(LoadBand.HIGH.aim(load, 6, 6, 2)).isEqualTo(-1);
    }

    @Test
    void aHighLoadKillAimsAtTheBusiestSecondOfItsStretch() {
        List<Double> load = List.of(0.0, 600.0, 1000.0, 800.0, 100.0, 900.0);
        assertThat(LoadBand.HIGH.aim(load, 0, 6, 1)).isEqualTo(3);
        // the busiest of the first stretch, not of the run
        assertThat(LoadBand.HIGH.aim(List.of(0.0, 600.0, 700.0, 100.0, 1000.0), 0, 5, 1)).isEqualTo(3);
        assertThat(LoadBand.LOW.aim(List.of(900.0, 200.0, 100.0, 0.0, 1000.0), 0, 5, 1)).isEqualTo(2);
    }
}
