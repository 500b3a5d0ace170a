package io.fragstate.examples.ysb;

import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.metrics.Counter;
import org.apache.flink.util.Collector;
import org.apache.flink.util.function.SerializableFunction;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Parses each Kafka record's JSON value with {@code parse}. A record it rejects (or a null or
 * non-UTF-8 value) is dropped, counted in the metric {@code metric} and logged (the first ten),
 * instead of failing the job in a restart loop.
 */
final class JsonRecordDeserializer<T> implements KafkaRecordDeserializationSchema<T> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(JsonRecordDeserializer.class);

    private final SerializableFunction<String, T> parse;
    private final Class<T> type;
    private final String metric;
    private transient Counter malformed;
    private transient long logged;

    JsonRecordDeserializer(SerializableFunction<String, T> parse, Class<T> type, String metric) {
        this.parse = parse;
        this.type = type;
        this.metric = metric;
    }

    @Override
    public void open(DeserializationSchema.InitializationContext context) {
        malformed = context.getMetricGroup().counter(metric);
    }

    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<T> out) {
        T value = parseOrNull(record.value());
        if (value != null) {
            out.collect(value);
            return;
        }
        if (malformed != null) {
            malformed.inc();
        }
        if (logged++ < 10) {
            LOG.warn("dropping a malformed record at {}-{} offset {}", record.topic(), record.partition(), record.offset());
        }
    }

    /** The parsed value, or null when {@code parse} rejects it. */
    T parseOrNull(byte[] value) {
        if (value == null) {
            return null;
        }
        try {
            return parse.apply(new String(value, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    @Override
    public TypeInformation<T> getProducedType() {
        return TypeInformation.of(type);
    }
}
