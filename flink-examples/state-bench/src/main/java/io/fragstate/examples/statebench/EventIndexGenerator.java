package io.fragstate.examples.statebench;

import org.apache.flink.connector.datagen.source.GeneratorFunction;

/** The datagen source's function: event {@code i} is the number {@code i}; records the position for the rate limiter. */
final class EventIndexGenerator implements GeneratorFunction<Long, Long> {
    private static final long serialVersionUID = 1L;

    private final SourcePosition position;

    EventIndexGenerator(SourcePosition position) {
        this.position = position;
    }

    @Override
    public Long map(Long index) {
        position.set(index + 1);
        return index;
    }
}
