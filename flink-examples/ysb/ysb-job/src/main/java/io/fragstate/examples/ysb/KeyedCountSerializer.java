package io.fragstate.examples.ysb;

import java.nio.charset.StandardCharsets;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema.KafkaSinkContext;
import org.apache.kafka.clients.producer.ProducerRecord;

/** Writes a count with the campaign id as record key and the element's timestamp. */
final class KeyedCountSerializer implements KafkaRecordSerializationSchema<KeyedCount> {
    private static final long serialVersionUID = 1L;
    private final String topic;

    KeyedCountSerializer(String topic) {
        this.topic = topic;
    }

    @Override
    public ProducerRecord<byte[], byte[]> serialize(KeyedCount c, KafkaSinkContext context, Long timestamp) {
        return new ProducerRecord<>(topic, null, timestamp,
                c.campaignId.getBytes(StandardCharsets.UTF_8), c.json.getBytes(StandardCharsets.UTF_8));
    }
}
