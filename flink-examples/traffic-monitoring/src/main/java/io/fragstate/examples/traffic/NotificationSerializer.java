package io.fragstate.examples.traffic;

import java.nio.charset.StandardCharsets;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.kafka.clients.producer.ProducerRecord;

/** Writes a notification with the plate as record key and the element's timestamp. */
final class NotificationSerializer implements KafkaRecordSerializationSchema<KeyedNotification> {
    private static final long serialVersionUID = 1L;
    private final String topic;

    NotificationSerializer(String topic) {
        this.topic = topic;
    }

    @Override
    public ProducerRecord<byte[], byte[]> serialize(KeyedNotification n, KafkaSinkContext context, Long timestamp) {
        return new ProducerRecord<>(topic, null, timestamp,
                n.lp.getBytes(StandardCharsets.UTF_8), n.json.getBytes(StandardCharsets.UTF_8));
    }
}
