// Prints Cassandra's own answers used as test oracles: AbstractType.valueLengthIfFixed()
// per CQL type and Murmur3Partitioner tokens (tests/cassandra/test_schema_types.c,
// test_murmur3.c). Run: java -cp "$(scripts/cassandra-node fetch)/*" Oracle.java
import org.apache.cassandra.db.marshal.*;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.config.DatabaseDescriptor;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
public class Oracle {
  public static void main(String[] a) throws Exception {
    DatabaseDescriptor.clientInitialization();
    AbstractType<?>[] ts = { AsciiType.instance, LongType.instance, BytesType.instance, BooleanType.instance, CounterColumnType.instance,
      SimpleDateType.instance, DecimalType.instance, DoubleType.instance, DurationType.instance, FloatType.instance, InetAddressType.instance,
      Int32Type.instance, ShortType.instance, UTF8Type.instance, TimeType.instance, TimestampType.instance, TimeUUIDType.instance, ByteType.instance,
      UUIDType.instance, IntegerType.instance, EmptyType.instance, DateType.instance, LexicalUUIDType.instance };
    for (AbstractType<?> t : ts) System.out.println(t.asCQL3Type() + " " + t.getClass().getSimpleName() + " " + t.valueLengthIfFixed());
    for (String s : new String[]{"vector<float, 3>", "vector<int, 2>", "vector<text, 2>", "vector<bigint, 4>", "tuple<int, int>", "frozen<list<int>>", "vector<vector<int,2>,3>", "vector<tinyint, 3>"}) {
      AbstractType<?> t = org.apache.cassandra.cql3.CQLFragmentParser.parseAny(org.apache.cassandra.cql3.CqlParser::comparatorType, s, "type").prepare("ks", org.apache.cassandra.schema.Types.none()).getType();
      System.out.println(s + " -> " + t.asCQL3Type() + " fixed=" + t.valueLengthIfFixed() + " multicell=" + t.isMultiCell());
    }
    String[] keys = {"", "a", "abc", "hello", "123456789012345", "1234567890123456", "12345678901234567", "\u00ff\u00fe\u0080"};
    for (String k : keys) {
      ByteBuffer b = ByteBuffer.wrap(k.getBytes(StandardCharsets.ISO_8859_1));
      System.out.println("TOKEN " + bytesToHex(b) + " " + Murmur3Partitioner.instance.getToken(b));
    }
    for (int i : new int[]{0,1,-1,42,2147483647,-2147483648}) {
      ByteBuffer b = Int32Type.instance.decompose(i);
      System.out.println("TOKEN int " + i + " " + bytesToHex(b) + " " + Murmur3Partitioner.instance.getToken(b));
    }
  }
  static String bytesToHex(ByteBuffer b){ StringBuilder sb=new StringBuilder(); for(int i=b.position();i<b.limit();i++) sb.append(String.format("%02x", b.get(i))); return sb.toString(); }
}
