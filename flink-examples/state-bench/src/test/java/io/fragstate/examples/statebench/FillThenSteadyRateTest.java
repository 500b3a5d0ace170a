package io.fragstate.examples.statebench;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Pacing at the fill rate below {@code keys}, at the steady rate from there on, and after a restore. */
class FillThenSteadyRateTest {
    private static final long MS = 1_000_000L;

    @Test
    void fillRateUntilEveryKeyExistsThenSteadyRate() {
        SourcePosition pos = new SourcePosition();
        FillThenSteadyRate.Limiter l = new FillThenSteadyRate.Limiter(pos, 3, 1000, 100, () -> 0L);
        long now = 0;
        // indices 0, 1, 2 at 1 ms spacing (fill), then 10 ms spacing
        assertThat(l.reserve(1, now)).isEqualTo(0);
        pos.set(1);
        assertThat(l.reserve(1, now)).isEqualTo(MS);
        pos.set(2);
        assertThat(l.reserve(1, now)).isEqualTo(2 * MS);
        pos.set(3);
        assertThat(l.reserve(1, now)).isEqualTo(3 * MS);
        pos.set(4);
        assertThat(l.reserve(1, now)).isEqualTo(13 * MS);
        now = 13 * MS;
        pos.set(5);
        assertThat(l.reserve(1, now)).isEqualTo(10 * MS);
    }

    @Test
    void restoredInSteadyPhaseStaysSteady() {
        SourcePosition pos = new SourcePosition();
        FillThenSteadyRate.Limiter l = new FillThenSteadyRate.Limiter(pos, 10, 1_000_000, 100, () -> 0L);
        // after a restore the position is 0 until the first record: that one record is paced at the fill rate
        assertThat(l.reserve(1, 0)).isEqualTo(0);
        pos.set(5_001); // the generator emitted index 5,000
        assertThat(l.reserve(1, 0)).isEqualTo(1_000); // 1 µs: the fill spacing of the first record
        pos.set(5_002);
        assertThat(l.reserve(1, 0)).isEqualTo(1_000 + 10 * MS);
    }

    @Test
    void behindScheduleCatchesUpAtMostTheBurstWindow() {
        SourcePosition pos = new SourcePosition();
        pos.set(100);
        FillThenSteadyRate.Limiter l = new FillThenSteadyRate.Limiter(pos, 10, 0, 1000, () -> 0L);
        assertThat(l.reserve(1, 0)).isEqualTo(0);
        long now = 10_000 * MS; // the job stalled for 10 s
        int immediate = 0;
        while (l.reserve(1, now) <= 0) {
            immediate++;
        }
        assertThat(immediate).isEqualTo((int) (FillThenSteadyRate.Limiter.MAX_CATCH_UP_NANOS / MS) + 1);
    }

    @Test
    void permitsDueWithinTenMillisecondsCompleteAtOnce() {
        SourcePosition pos = new SourcePosition();
        pos.set(100);
        FillThenSteadyRate.Limiter l = new FillThenSteadyRate.Limiter(pos, 10, 0, 1000, () -> 0L);
        for (int i = 0; i < 10; i++) {
            assertThat(l.acquire(1).toCompletableFuture()).as("permit %d, due at %d ms", i, i).isDone();
        }
        assertThat(l.acquire(1).toCompletableFuture()).as("permit 10, due at 10 ms").isNotDone();
    }

    @Test
    void zeroRateDoesNotThrottle() {
        SourcePosition pos = new SourcePosition();
        FillThenSteadyRate.Limiter l = new FillThenSteadyRate.Limiter(pos, 10, 0, 0, () -> 0L);
        for (int i = 0; i < 1000; i++) {
            pos.set(i);
            assertThat(l.reserve(1, 0)).isLessThanOrEqualTo(0);
        }
    }
}
