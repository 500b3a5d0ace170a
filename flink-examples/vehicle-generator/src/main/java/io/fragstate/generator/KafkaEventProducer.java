package io.fragstate.generator;

import java.io.PrintStream;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Sends a simulation ({@link EventSource}) to Kafka, paced so that simulated second {@code t} goes
 * out at wall time {@code t / speedup} after the start (event times stay simulated). Record key and
 * timestamp are the source's (the traffic simulation: plate and event time). After the last second
 * the source's end-of-input record goes to every partition. Idempotent producer with {@code
 * acks=all}: the input topic holds each event exactly once.
 */
public final class KafkaEventProducer {
    /** What a run sent. */
    public record Stats(long events, int partitions, double wallSeconds) {}

    private final String brokers;
    private final String topic;
    private final int partitions;
    private final double speedup;
    private final double progressIntervalSeconds;
    private final PrintStream progress;

    public KafkaEventProducer(String brokers, String topic, int partitions, double speedup,
            double progressIntervalSeconds, PrintStream progress) {
        if (!(speedup > 0)) {
            throw new IllegalArgumentException("--speedup must be positive, got " + speedup);
        }
        this.brokers = brokers;
        this.topic = topic;
        this.partitions = partitions;
        this.speedup = speedup;
        this.progressIntervalSeconds = progressIntervalSeconds;
        this.progress = progress;
    }

    /**
     * Creates the topic with the configured partition count unless it exists. Time-based retention
     * is switched off on it: the events carry simulated timestamps (by default in November 2023),
     * and a broker's default 7-day retention would delete them within a minute.
     */
    public void ensureTopic() throws InterruptedException {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(Map.of("retention.ms", "-1"))))
                    .all().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new IllegalStateException("cannot create topic " + topic + " on " + brokers + ": " + e.getCause(), e);
            }
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("no Kafka broker answered at " + brokers + " within 60 s", e);
        }
    }

    public Stats run(GeneratorConfig config) throws InterruptedException {
        return run(TrafficSimulator.events(config), second -> { });
    }

    /** The traffic simulation of {@code config}; {@code onSecond} as in {@link #run(EventSource, IntConsumer)}. */
    public Stats run(GeneratorConfig config, IntConsumer onSecond) throws InterruptedException {
        return run(TrafficSimulator.events(config), onSecond);
    }

    /**
     * Sends the whole simulation.
     *
     * @param onSecond told the number of simulated seconds sent so far, after each second
     */
    public Stats run(EventSource sim, IntConsumer onSecond) throws InterruptedException {
        ensureTopic();
        AtomicReference<Exception> failure = new AtomicReference<>();
        long sent = 0;
        long start = System.nanoTime();
        long lastReport = start;
        long sentAtLastReport = 0;
        try (KafkaProducer<String, String> producer = newProducer()) {
            while (sim.hasNext()) {
                int second = sim.currentSecond();
                long due = start + (long) (second * 1e9 / speedup);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    TimeUnit.NANOSECONDS.sleep(wait);
                }
                List<EventSource.Event> events = sim.nextSecond();
                for (EventSource.Event e : events) {
                    producer.send(new ProducerRecord<>(topic, null, e.timestampMs(), e.key(), e.json()), (md, ex) -> {
                        if (ex != null) {
                            failure.compareAndSet(null, ex);
                        }
                    });
                }
                sent += events.size();
                onSecond.accept(second + 1);
                if (failure.get() != null) {
                    throw new IllegalStateException("sending to " + topic + " failed: " + failure.get(), failure.get());
                }
                long now = System.nanoTime();
                if (progress != null && (now - lastReport) / 1e9 >= progressIntervalSeconds) {
                    double rate = (sent - sentAtLastReport) / ((now - lastReport) / 1e9);
                    progress.printf("generator: second %d/%d, %d events in it, %d events sent, %.0f events/s%n",
                            second + 1, sim.durationSeconds(), events.size(), sent, rate);
                    lastReport = now;
                    sentAtLastReport = sent;
                }
            }
            List<PartitionInfo> parts = producer.partitionsFor(topic);
            EventSource.Event flush = sim.flushEvent();
            for (PartitionInfo part : parts) {
                producer.send(new ProducerRecord<>(topic, part.partition(), flush.timestampMs(), flush.key(), flush.json()));
            }
            producer.flush();
            if (failure.get() != null) {
                throw new IllegalStateException("sending to " + topic + " failed: " + failure.get(), failure.get());
            }
            double wall = (System.nanoTime() - start) / 1e9;
            if (progress != null) {
                progress.printf("generator: done, %d events in %.1f s (%.0f events/s), end-of-input sent to %d partitions%n",
                        sent, wall, sent / wall, parts.size());
            }
            return new Stats(sent, parts.size(), wall);
        }
    }

    /**
     * Sends {@code records} at once (no pacing, no end-of-input record) and waits until the
     * broker has acknowledged every one: a reference table a job reads before its input, e.g. the
     * Yahoo Streaming Benchmark's campaigns.
     */
    public void sendAll(List<EventSource.Event> records) throws InterruptedException {
        ensureTopic();
        try (KafkaProducer<String, String> producer = newProducer()) {
            List<java.util.concurrent.Future<?>> acks = new java.util.ArrayList<>(records.size());
            for (EventSource.Event e : records) {
                acks.add(producer.send(new ProducerRecord<>(topic, null, e.timestampMs(), e.key(), e.json())));
            }
            producer.flush();
            for (java.util.concurrent.Future<?> ack : acks) {
                ack.get();
            }
        } catch (ExecutionException e) {
            throw new IllegalStateException("sending to " + topic + " failed: " + e.getCause(), e.getCause());
        }
    }

    /** Idempotent, {@code acks=all}: each record lands in the topic exactly once. */
    private KafkaProducer<String, String> newProducer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "10");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }
}
