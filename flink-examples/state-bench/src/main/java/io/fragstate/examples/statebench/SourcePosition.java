package io.fragstate.examples.statebench;

import java.io.Serializable;

/**
 * The next event index of the one source reader, written by {@link EventIndexGenerator} and read
 * by {@link FillThenSteadyRate}'s limiter. Both hold the same instance: Java serialization keeps
 * shared references within the one object graph Flink ships per task (the source), so each task
 * gets one shared copy. Not checkpointed (the source's split is): after a restore it is 0 until
 * the first record, so exactly one record is paced at the fill rate however far the job is.
 */
final class SourcePosition implements Serializable {
    private static final long serialVersionUID = 1L;

    private transient volatile long next;

    long next() {
        return next;
    }

    void set(long nextIndex) {
        next = nextIndex;
    }
}
