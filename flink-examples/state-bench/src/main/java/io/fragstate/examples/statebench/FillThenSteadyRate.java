package io.fragstate.examples.statebench;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;

/**
 * Paces the source at {@code fillPerSecond} while the next event index is below {@code keys}
 * (the keys are being created) and at {@code steadyPerSecond} afterwards; a rate of 0 does not
 * throttle. The index comes from the {@link SourcePosition} shared with the generator, so a
 * restore in the steady phase continues at the steady rate.
 *
 * <p>Permits are spaced on {@code System.nanoTime}. One due within {@link Limiter#AHEAD_NANOS}
 * (10 ms) completes at once, a later one through {@link CompletableFuture#delayedExecutor} (the
 * JDK's timer thread, so no thread of the job's class loader outlives it): the source runs at most
 * 10 ms ahead of its schedule and sleeps about 100 times a second, not once per record (at 2,000
 * events/s a timer wake-up per record cost the TaskManager a tenth of a core). A source that fell behind (backpressure, a late
 * timer on a busy machine) may catch up at most {@link Limiter#MAX_CATCH_UP_NANOS} (1 s, like the
 * Guava limiter behind {@link RateLimiterStrategy#perSecond}) worth of permits in a burst, so the
 * average rate holds.
 */
final class FillThenSteadyRate implements RateLimiterStrategy<NumberSequenceSplit> {
    private static final long serialVersionUID = 1L;

    private final SourcePosition position;
    private final long keys;
    private final double fillPerSecond;
    private final double steadyPerSecond;

    FillThenSteadyRate(SourcePosition position, long keys, double fillPerSecond, double steadyPerSecond) {
        this.position = position;
        this.keys = keys;
        this.fillPerSecond = fillPerSecond;
        this.steadyPerSecond = steadyPerSecond;
    }

    @Override
    public RateLimiter<NumberSequenceSplit> createRateLimiter(int parallelism) {
        return new Limiter(position, keys, fillPerSecond / parallelism, steadyPerSecond / parallelism, System::nanoTime);
    }

    static final class Limiter implements RateLimiter<NumberSequenceSplit> {
        static final long MAX_CATCH_UP_NANOS = 1_000_000_000L;
        static final long AHEAD_NANOS = 10_000_000L;
        private static final CompletableFuture<Void> NOW = CompletableFuture.completedFuture(null);

        private final SourcePosition position;
        private final long keys;
        private final double fillPerSecond;
        private final double steadyPerSecond;
        private final LongSupplier clock;
        private boolean started;
        private long nextFreeNanos;

        Limiter(SourcePosition position, long keys, double fillPerSecond, double steadyPerSecond, LongSupplier clock) {
            this.position = position;
            this.keys = keys;
            this.fillPerSecond = fillPerSecond;
            this.steadyPerSecond = steadyPerSecond;
            this.clock = clock;
        }

        @Override
        public CompletionStage<Void> acquire(int permits) {
            long wait = reserve(permits, clock.getAsLong());
            if (wait < AHEAD_NANOS) {
                return NOW;
            }
            return CompletableFuture.runAsync(() -> {}, CompletableFuture.delayedExecutor(wait, TimeUnit.NANOSECONDS));
        }

        /** Takes {@code permits} at time {@code now}; returns how many nanoseconds the caller must wait (<= 0: none). */
        long reserve(int permits, long now) {
            double perSecond = position.next() < keys ? fillPerSecond : steadyPerSecond;
            if (perSecond <= 0) {
                started = false;
                return 0;
            }
            if (!started) {
                nextFreeNanos = now;
                started = true;
            } else if (nextFreeNanos < now - MAX_CATCH_UP_NANOS) {
                nextFreeNanos = now - MAX_CATCH_UP_NANOS;
            }
            long at = nextFreeNanos;
            nextFreeNanos += (long) (permits * 1e9 / perSecond);
            return at - now;
        }
    }
}
