/*
 * ConnectOffsetsReader.java - reads an offsets topic the way Kafka Connect
 * does (KafkaOffsetBackingStore: bytes per key, last value wins; then
 * OffsetStorageReaderImpl: JsonConverter with schemas.enable=false turns key
 * and value into Connect data) and prints one line per key:
 *     <connector>\t<partition map>\t<offset map>
 * Used by tests/worker/test_it_worker.c as the outside oracle that our
 * offsets topic is readable by Connect's own code (connect-json 4.3.1).
 *
 * Run (single-file source launch):
 *   java -cp <kafka libs>:<connect-json.jar>:<connect-api.jar> ConnectOffsetsReader.java BOOTSTRAP TOPIC
 */
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;

public class ConnectOffsetsReader {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        Map<ByteBuffer, byte[]> last = new LinkedHashMap<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            c.partitionsFor(args[1]).forEach(i -> tps.add(new TopicPartition(args[1], i.partition())));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 60000;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) if (c.position(tp) < end.get(tp)) done = false;
                if (done) break;
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500)))
                    last.put(ByteBuffer.wrap(r.key()), r.value());
            }
        }
        JsonConverter conv = new JsonConverter();
        conv.configure(Collections.singletonMap("schemas.enable", "false"), true);
        JsonConverter vconv = new JsonConverter();
        vconv.configure(Collections.singletonMap("schemas.enable", "false"), false);
        for (Map.Entry<ByteBuffer, byte[]> e : last.entrySet()) {
            SchemaAndValue k = conv.toConnectData(args[1], e.getKey().array());
            if (!(k.value() instanceof List) || ((List<?>) k.value()).size() != 2)
                throw new IllegalStateException("offsets key is not [connector, partition]: " + k.value());
            List<?> kl = (List<?>) k.value();
            if (!(kl.get(0) instanceof String) || !(kl.get(1) instanceof Map))
                throw new IllegalStateException("offsets key has wrong types: " + kl);
            Object v = e.getValue() == null ? null : vconv.toConnectData(args[1], e.getValue()).value();
            if (v != null && !(v instanceof Map)) throw new IllegalStateException("offset value is not a map: " + v);
            System.out.println(kl.get(0) + "\t" + kl.get(1) + "\t" + v);
        }
    }
}
