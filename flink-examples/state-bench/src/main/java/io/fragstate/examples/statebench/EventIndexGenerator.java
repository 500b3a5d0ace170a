package io.fragstate.examples.statebench;

import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The datagen source's function: event {@code i} is the number {@code i}. Records the position for
 * the rate limiter and logs (TaskManager log) when index 0 and index {@code keys - 1} (the last
 * key's creation, the end of the fill) are emitted, with the fill's duration.
 */
final class EventIndexGenerator implements GeneratorFunction<Long, Long> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(EventIndexGenerator.class);

    private final SourcePosition position;
    private final long keys;
    private transient long firstNanos;

    EventIndexGenerator(SourcePosition position, long keys) {
        this.position = position;
        this.keys = keys;
    }

    @Override
    public Long map(Long index) {
        position.set(index + 1);
        if (index == 0) {
            firstNanos = System.nanoTime();
            LOG.info("state-bench: emitted event 0, filling {} keys", keys);
        } else if (index == keys - 1) {
            LOG.info("state-bench: emitted event {}: every key exists{}", index, firstNanos == 0 ? ""
                    : String.format(" (fill took %.1f s)", (System.nanoTime() - firstNanos) / 1e9));
        }
        return index;
    }
}
