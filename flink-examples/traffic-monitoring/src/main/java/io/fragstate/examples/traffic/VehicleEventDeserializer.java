package io.fragstate.examples.traffic;

import io.fragstate.traffic.VehicleEvent;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.metrics.Counter;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Parses the JSON value of each Kafka record. A record that is not a valid vehicle event is
 * dropped (counted in the metric {@code malformedEvents} and logged, rate-limited) instead of
 * failing the job in a restart loop.
 */
final class VehicleEventDeserializer implements KafkaRecordDeserializationSchema<VehicleEvent> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(VehicleEventDeserializer.class);

    private transient Counter malformed;
    private transient long logged;

    @Override
    public void open(DeserializationSchema.InitializationContext context) {
        malformed = context.getMetricGroup().counter("malformedEvents");
    }

    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<VehicleEvent> out) {
        VehicleEvent e = parseOrNull(record.value());
        if (e != null) {
            out.collect(e);
            return;
        }
        if (malformed != null) {
            malformed.inc();
        }
        if (logged++ < 10) {
            LOG.warn("dropping a malformed record at {}-{} offset {}", record.topic(), record.partition(), record.offset());
        }
    }

    /** The parsed event, or null for a null, non-UTF-8-JSON or incomplete value. */
    static VehicleEvent parseOrNull(byte[] value) {
        if (value == null) {
            return null;
        }
        try {
            return VehicleEvent.parse(new String(value, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    @Override
    public TypeInformation<VehicleEvent> getProducedType() {
        return TypeInformation.of(VehicleEvent.class);
    }
}
