package io.fragstate.it;

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntConsumer;

/**
 * When the vehicle generator sent each simulated second (wall clock), heard through the
 * generator's per-second callback, and from that when a window of the job could first fire.
 * Simulated second {@code s} holds events with times {@code [start + s·1000, start + s·1000 +
 * 999]} ({@link io.fragstate.generator.GeneratorConfig}); the job's watermark lags the newest
 * event time by its 2 s bounded out-of-orderness, so a window ending at {@code W} can fire once
 * second {@code (W + 2000 - start) / 1000} has been sent.
 */
final class GeneratorClock implements IntConsumer {
    /** The job's bounded out-of-orderness. */
    static final long OUT_OF_ORDERNESS_MS = 2_000;

    private final long startEpochMs;
    private final AtomicLongArray sentAtMs;

    GeneratorClock(long startEpochMs, int seconds) {
        this.startEpochMs = startEpochMs;
        this.sentAtMs = new AtomicLongArray(seconds);
        for (int s = 0; s < seconds; s++) {
            sentAtMs.set(s, -1);
        }
    }

    /** The generator has sent {@code sent} seconds (0 .. sent-1). */
    @Override
    public void accept(int sent) {
        int s = sent - 1;
        if (s >= 0 && s < sentAtMs.length()) {
            sentAtMs.compareAndSet(s, -1, System.currentTimeMillis());
        }
    }

    /** The wall time simulated second {@code s} was sent, or -1 (not yet, or outside the run). */
    long sentAtMs(long s) {
        return s >= 0 && s < sentAtMs.length() ? sentAtMs.get((int) s) : -1;
    }

    /** The wall time a window ending at event time {@code windowEndMs} could first fire, or -1 when unknown. */
    long closableAtMs(long windowEndMs) {
        return sentAtMs(Math.floorDiv(windowEndMs + OUT_OF_ORDERNESS_MS - startEpochMs, 1000));
    }
}
