package io.fragstate.it;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Triggers the job's checkpoints through the REST API every {@link #setInterval interval}
 * seconds, one at a time, in its own thread — what {@code fragstate tune} does for its chosen
 * interval, done by the harness for the failure experiments. REST errors (a job restarting after
 * a kill) are retried at the next tick.
 */
final class CheckpointTrigger implements AutoCloseable {
    private final FlinkRest rest;
    private final String jobId;
    private final Thread thread;
    private final AtomicInteger completed = new AtomicInteger();
    private volatile int intervalS;
    private volatile boolean stop;
    private volatile long lastCompletedAtMs = -1;
    private volatile boolean triggerNow;

    CheckpointTrigger(FlinkRest rest, String jobId, int intervalS) {
        this.rest = rest;
        this.jobId = jobId;
        this.intervalS = intervalS;
        thread = new Thread(this::loop, "checkpoint-trigger");
        thread.setDaemon(true);
        thread.start();
    }

    void setInterval(int seconds) {
        intervalS = seconds;
    }

    /** Triggers a checkpoint at the next tick (once none is in flight); the interval counts from it. */
    void triggerNow() {
        triggerNow = true;
    }

    /** Wall time of the newest checkpoint this trigger saw complete, or -1. */
    long lastCompletedAtMs() {
        return lastCompletedAtMs;
    }

    int completed() {
        return completed.get();
    }

    private void loop() {
        long lastTriggerMs = System.currentTimeMillis();
        String pending = null;
        while (!stop) {
            try {
                long now = System.currentTimeMillis();
                if (pending == null && (triggerNow || now - lastTriggerMs >= intervalS * 1000L)) {
                    triggerNow = false;
                    pending = rest.triggerCheckpoint(jobId);
                    lastTriggerMs = now;
                } else if (pending != null) {
                    String status = rest.checkpointTriggerStatus(jobId, pending);
                    if (status.equals("COMPLETED")) {
                        lastCompletedAtMs = now;
                        completed.incrementAndGet();
                        pending = null;
                    } else if (status.startsWith("FAILED")) {
                        Report.step("triggered checkpoint failed: " + status);
                        pending = null;
                    }
                }
            } catch (IllegalStateException e) {
                pending = null; // the job restarted: its trigger requests are gone
            }
            try {
                Thread.sleep(250);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        stop = true;
        thread.interrupt();
        thread.join(5_000);
    }
}
