package io.fragstate.it;

import java.time.Duration;

/** The polling helpers of the harness: every wait has a timeout and says what it waited for. */
final class Waits {
    /** A condition polled until it holds. */
    interface Check {
        boolean done() throws Exception;
    }

    /** One unit of work done between two polls (it should block a while itself, e.g. a Kafka poll). */
    interface Step {
        void run() throws Exception;
    }

    /** The generator ended before the disruption could happen: no point in waiting on. */
    static final String RUN_TOO_SHORT = "make the run longer";

    private Waits() {}

    /**
     * Polls {@code check} every 250 ms until it holds; an {@link IllegalStateException} from it
     * (REST briefly unavailable during a failover) counts as "not yet", except the one naming
     * {@link #RUN_TOO_SHORT}.
     *
     * @throws IllegalStateException after {@code timeout}, naming {@code what} and the last error
     */
    static void waitFor(String what, Duration timeout, Check check) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try {
                if (check.done()) {
                    return;
                }
            } catch (IllegalStateException e) {
                if (e.getMessage() != null && e.getMessage().contains(RUN_TOO_SHORT)) {
                    throw e;
                }
                last = e; // REST briefly unavailable during failover
            }
            Thread.sleep(250);
        }
        throw new IllegalStateException("timed out after " + timeout.toSeconds() + " s waiting for " + what
                + (last == null ? "" : " (last error: " + last.getMessage() + ")"));
    }

    /**
     * Runs {@code step} until {@code done} holds or {@code timeout} has passed (checked first, so
     * {@code done} is not asked after the deadline); no exception on a timeout.
     */
    static void pollUntil(Duration timeout, Check done, Step step) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline && !done.done()) {
            step.run();
        }
    }
}
