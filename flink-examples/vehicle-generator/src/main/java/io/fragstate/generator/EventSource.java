package io.fragstate.generator;

import java.util.List;

/**
 * A deterministic workload, one simulated second at a time, as {@link KafkaEventProducer} sends it:
 * keyed JSON records whose timestamps are simulated event times (never the wall clock), then one
 * end-of-input record for every partition whose time is past the last window, so that every
 * watermark passes the end. Implemented by the traffic simulation ({@link TrafficSimulator#events})
 * and by the Yahoo Streaming Benchmark's ad-event generator.
 */
public interface EventSource {
    /** One Kafka record: key, event time (the record timestamp) and JSON value. */
    record Event(String key, long timestampMs, String json) {}

    /** Seconds the whole run simulates. */
    int durationSeconds();

    boolean hasNext();

    /** Simulated second that {@link #nextSecond()} produces next. */
    int currentSecond();

    /** The records of the next simulated second, in event-time order. */
    List<Event> nextSecond();

    /** The end-of-input record (sent to every partition after the last second). */
    Event flushEvent();
}
