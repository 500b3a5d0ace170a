package io.fragstate.it;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The job's committed output: a {@code read_committed} consumer over all partitions of the output
 * topic, from the beginning, and the exactly-once comparison of what it read with the reference
 * computation (as multisets: nothing missing, nothing duplicated, every value equal).
 */
final class OutputCollector implements AutoCloseable {
    private final KafkaConsumer<String, String> consumer;
    private final List<String> values = new ArrayList<>();
    private final List<String> keyMismatches = new ArrayList<>();
    private final String keyField;

    /** @param keyField the JSON field of each output line whose value must be the record's key */
    OutputCollector(String brokers, String topic, String keyField) {
        consumer = fromTheBeginning(brokers, topic, "read_committed");
        this.keyField = keyField;
    }

    /**
     * A consumer of every partition of {@code topic} from its beginning, with the given {@code
     * isolation.level} and no committed offsets (also the {@link LatencyCollector}'s).
     */
    static KafkaConsumer<String, String> fromTheBeginning(String brokers, String topic, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        List<TopicPartition> parts = new ArrayList<>();
        c.partitionsFor(topic).forEach(pi -> parts.add(new TopicPartition(topic, pi.partition())));
        c.assign(parts);
        c.seekToBeginning(parts);
        return c;
    }

    void poll(Duration d) {
        for (ConsumerRecord<String, String> r : consumer.poll(d)) {
            values.add(r.value());
            // the record key must be the line's key field (the plate, the campaign)
            if (r.key() == null || !r.value().contains("\"" + keyField + "\":" + quote(r.key()) + ",")) {
                keyMismatches.add(r.key() + " -> " + r.value());
            }
        }
    }

    /** Polls until nothing arrives for {@code quiet}. */
    void drain(Duration quiet) {
        long last = System.nanoTime();
        while (System.nanoTime() - last < quiet.toNanos()) {
            int before = values.size();
            poll(Duration.ofMillis(300));
            if (values.size() != before) {
                last = System.nanoTime();
            }
        }
    }

    /**
     * Reads until {@code expected} notifications are committed (at most 120 s), then on through
     * two more completed checkpoints of the job (= commits, so that a late duplicate shows up) and
     * a final quiet read.
     */
    void awaitExpected(int expected, FlinkRest rest, String jobId) throws Exception {
        Waits.pollUntil(Duration.ofSeconds(120), () -> count() >= expected, () -> poll(Duration.ofMillis(500)));
        long target = rest.completedCheckpoints(jobId) + 2;
        Waits.waitFor("two more checkpoints", Duration.ofSeconds(60), () -> {
            poll(Duration.ofMillis(200));
            return rest.completedCheckpoints(jobId) >= target;
        });
        drain(Duration.ofSeconds(3));
    }

    /** The exactly-once verdict: what was read against {@code expected}, into {@code result}. */
    void compareWith(List<String> expected, ScenarioRunner.Result result) {
        result.committedNotifications = values.size();
        Map<String, Integer> diff = new TreeMap<>();
        expected.forEach(s -> diff.merge(s, 1, Integer::sum));
        values.forEach(s -> diff.merge(s, -1, Integer::sum));
        diff.forEach((s, n) -> {
            for (int i = 0; i < Math.abs(n); i++) {
                (n > 0 ? result.missing : result.duplicatesOrUnexpected).add(s);
            }
        });
        result.keyMismatches = keyMismatches.size();
        if (!keyMismatches.isEmpty()) {
            Report.step("records whose key is not their " + keyField + ": " + keyMismatches.subList(0, Math.min(3, keyMismatches.size())));
        }
    }

    int count() {
        return values.size();
    }

    private static String quote(String s) {
        try {
            return new ObjectMapper().writeValueAsString(s);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(5));
    }
}
