package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fragstate.generator.RateProfile;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class ExperimentScheduleTest {
    /** A profile that is low for 100 s, high for 100 s, and so on. */
    private static List<Double> squareWave(int seconds) {
        return IntStream.range(0, seconds).mapToObj(s -> (s / 100) % 2 == 0 ? 100.0 : 1000.0).toList();
    }

    @Test
    void killsLandInTheirBandAfterTheSteadyStretchAndTheOffset() {
        List<Double> load = squareWave(2000);
        ExperimentSchedule schedule = new ExperimentSchedule(List.of(10, 60), load);
        double now = 0;
        for (int i = 0; i < 6; i++) {
            Optional<ExperimentSchedule.Pick> p = schedule.next(now, 0.5, 1900);
            assertThat(p).isPresent();
            int kill = p.get().killSecond();
            double before = load.subList(kill - ExperimentSchedule.THROUGHPUT_WINDOW_S, kill).stream().mapToDouble(Double::doubleValue).average().orElseThrow();
            assertThat(LoadBand.HIGH.holds(before, 1000) ? LoadBand.HIGH : LoadBand.LOW).isEqualTo(p.get().band());
            assertThat(p.get().band().holds(before, 1000)).isTrue();
            assertThat((double) kill).isGreaterThanOrEqualTo(now + ExperimentSchedule.leadS(p.get().intervalS(), 0.5));
            now = kill + 60;
        }
    }

    @Test
    void everyIntervalGetsBothBandsBeforeAnyPairRepeats() {
        ExperimentSchedule schedule = new ExperimentSchedule(List.of(10, 60, 30, 120), squareWave(20_000));
        Set<String> seen = new HashSet<>();
        double now = 0;
        for (int i = 0; i < 8; i++) {
            ExperimentSchedule.Pick p = schedule.next(now, 0.3, 19_000).orElseThrow();
            assertThat(seen.add(p.intervalS() + "/" + p.band().name())).as("pair %s repeated", p).isTrue();
            now = p.killSecond() + 60;
        }
    }

    @Test
    void nothingWhenNoBandFitsBeforeTheLastKill() {
        ExperimentSchedule schedule = new ExperimentSchedule(List.of(120), squareWave(400));
        assertThat(schedule.next(300, 0.9, 340)).isEmpty();
    }

    /** What the Daedalus profile fits as tune-eval.sh plays it (8-minute runs: 53x) in its 20-minute experiments run. */
    @Test
    void theDaedalusProfileReachesTheRecoveryModelsCornersInTwentyMinutes() {
        RateProfile profile = RateProfile.daedalus().compressed(53);
        int seconds = 20 * 60;
        List<Double> load = new ArrayList<>();
        for (int s = 0; s < seconds; s++) {
            load.add((double) profile.count(s));
        }
        ExperimentSchedule schedule = new ExperimentSchedule(List.of(120, 10, 60, 30), load);
        Set<String> pairs = new HashSet<>();
        double now = 0;
        Optional<ExperimentSchedule.Pick> p;
        while ((p = schedule.next(now, 0.5, seconds - 60)).isPresent()) {
            pairs.add(p.get().intervalS() + "/" + p.get().band().name());
            now = p.get().killSecond() + 60; // a recovery of about a minute
        }
        assertThat(pairs).hasSizeGreaterThanOrEqualTo(6).contains("120/high", "120/low", "10/high", "10/low");
    }
}
