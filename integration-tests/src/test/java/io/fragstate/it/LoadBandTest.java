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
    void theFirstSecondInTheBandCountsFromTheRunsPeak() {
        List<Double> load = List.of(0.0, 100.0, 600.0, 1000.0, 200.0, 700.0);
        assertThat(LoadBand.HIGH.firstSecond(load, 0, 5)).isEqualTo(2);
        assertThat(LoadBand.HIGH.firstSecond(load, 4, 5)).isEqualTo(5);
        assertThat(LoadBand.LOW.firstSecond(load, 2, 5)).isEqualTo(4);
        assertThat(LoadBand.LOW.firstSecond(load, 2, 3)).isEqualTo(-1);
        assertThat(LoadBand.HIGH.firstSecond(load, 4, 99)).isEqualTo(5);
    }
}
