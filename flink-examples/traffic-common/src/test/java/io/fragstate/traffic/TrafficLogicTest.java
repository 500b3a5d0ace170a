package io.fragstate.traffic;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class TrafficLogicTest {
    @Test
    void windowsAreTenSecondsWithOneSecondOffset() {
        assertThat(TrafficLogic.windowStart(0, 1_000, 10_000)).isEqualTo(-9_000);
        assertThat(TrafficLogic.windowStart(999, 1_000, 10_000)).isEqualTo(-9_000);
        assertThat(TrafficLogic.windowStart(1_000, 1_000, 10_000)).isEqualTo(1_000);
        assertThat(TrafficLogic.windowStart(10_999, 1_000, 10_000)).isEqualTo(1_000);
        assertThat(TrafficLogic.windowStart(11_000, 1_000, 10_000)).isEqualTo(11_000);
        assertThat(TrafficLogic.windowStart(-1, 1_000, 10_000)).isEqualTo(-9_000);
        assertThat(TrafficLogic.windowStart(-9_001, 1_000, 10_000)).isEqualTo(-19_000);
        assertThat(TrafficLogic.windowEnd(1_700_000_000_500L)).isEqualTo(1_700_000_001_000L);
        assertThat(TrafficLogic.windowEnd(1_700_000_001_000L)).isEqualTo(1_700_000_011_000L);
    }

    @Test
    void pointOfInterestRadius() {
        assertThat(TrafficLogic.inPointOfInterest(TrafficLogic.POI_LAT, TrafficLogic.POI_LON)).isTrue();
        // 0.0089 degrees of latitude is ~990 m, 0.0091 is ~1,012 m
        assertThat(TrafficLogic.inPointOfInterest(TrafficLogic.POI_LAT + 0.0089, TrafficLogic.POI_LON)).isTrue();
        assertThat(TrafficLogic.inPointOfInterest(TrafficLogic.POI_LAT + 0.0091, TrafficLogic.POI_LON)).isFalse();
        assertThat(TrafficLogic.inPointOfInterest(0, 0)).isFalse();
    }

    @Test
    void speedIsDistanceOverReportsTimesInterval() {
        assertThat(TrafficLogic.speedKmh(100.0, 10)).isEqualTo(36);   // 10 m/s
        assertThat(TrafficLogic.speedKmh(0.0, 1)).isZero();
        assertThat(TrafficLogic.speedKmh(13.75, 1)).isEqualTo(50);    // 49.5 rounds up
        assertThat(TrafficLogic.speedKmh(13.6, 1)).isEqualTo(49);     // 48.96
        assertThatThrownBy(() -> TrafficLogic.speedKmh(1, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void summarizeSortsByTimeAndKeepsTheLastPosition() {
        VehicleEvent a = new VehicleEvent("B-X 1", 52.5160, 13.3850, 1_000);
        VehicleEvent b = new VehicleEvent("B-X 1", 52.5161, 13.3850, 2_000);
        VehicleEvent c = new VehicleEvent("B-X 1", 52.5162, 13.3850, 3_000);
        WindowSummary inOrder = TrafficLogic.summarize("B-X 1", 11_000, List.of(a, b, c));
        WindowSummary shuffled = TrafficLogic.summarize("B-X 1", 11_000, List.of(c, a, b));
        assertThat(shuffled).isEqualTo(inOrder);
        assertThat(inOrder.lat).isEqualTo(52.5162);
        assertThat(inOrder.reports).isEqualTo(3);
        double meters = Geo.distanceMeters(52.5160, 13.3850, 52.5161, 13.3850)
                + Geo.distanceMeters(52.5161, 13.3850, 52.5162, 13.3850);
        assertThat(inOrder.speedKmh).isEqualTo((int) Math.round(meters / 3 * 3.6));
        assertThat(inOrder.speedKmh).isEqualTo(27); // ~22.3 m over 3 s
    }

    @Test
    void singleReportHasSpeedZero() {
        WindowSummary s = TrafficLogic.summarize("B-X 1", 11_000, List.of(new VehicleEvent("B-X 1", 52.5, 13.4, 5)));
        assertThat(s.speedKmh).isZero();
        assertThat(s.reports).isOne();
    }
}
