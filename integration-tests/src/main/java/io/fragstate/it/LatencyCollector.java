package io.fragstate.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * The job's output as it is written, for its latency: a {@code read_uncommitted} consumer in its
 * own thread that notes when each notification is first seen (a notification replayed after a
 * restore is counted once, when first written; its repetition is the restore's, which the
 * staleness of {@link LatencySeries} measures). The exactly-once check stays with the
 * read_committed {@link OutputCollector}.
 */
final class LatencyCollector implements AutoCloseable {
    private static final Pattern WINDOW_END = Pattern.compile("\"windowEnd\":(\\d+)");

    private final KafkaConsumer<String, String> consumer;
    private final Thread thread;
    private final Set<String> seen = new HashSet<>();
    private final List<LatencySeries.Sample> samples = new ArrayList<>();
    private volatile boolean stop;

    LatencyCollector(String brokers, String topic) {
        consumer = OutputCollector.fromTheBeginning(brokers, topic, "read_uncommitted");
        thread = new Thread(this::loop, "latency-collector");
        thread.setDaemon(true);
        thread.start();
    }

    private void loop() {
        while (!stop) {
            var records = consumer.poll(Duration.ofMillis(100));
            long now = System.currentTimeMillis();
            synchronized (this) {
                for (ConsumerRecord<String, String> r : records) {
                    long end = windowEnd(r.value());
                    if (end >= 0 && seen.add(r.value())) {
                        samples.add(new LatencySeries.Sample(now, end));
                    }
                }
            }
        }
    }

    /** The {@code windowEnd} of a notification, or -1 when it has none. */
    static long windowEnd(String notification) {
        Matcher m = WINDOW_END.matcher(notification);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    /** The notifications seen so far. */
    synchronized List<LatencySeries.Sample> samples() {
        return List.copyOf(samples);
    }

    @Override
    public void close() throws InterruptedException {
        stop = true;
        thread.join(5_000);
        consumer.close(Duration.ofSeconds(5));
    }
}
