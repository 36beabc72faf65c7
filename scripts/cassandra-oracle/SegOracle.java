// Prints a CQL protocol v5 segment (READY on stream 2) framed with Cassandra's own
// org.apache.cassandra.net.Crc (crc24 header CRC, seeded CRC32 payload CRC), for
// tests/cassandra/test_cql_replay.c. Run: java -cp "$(scripts/cassandra-node fetch)/*" SegOracle.java
import java.lang.reflect.Method;
import java.util.zip.CRC32;
public class SegOracle {
  public static void main(String[] a) throws Exception {
    Class<?> crc = Class.forName("org.apache.cassandra.net.Crc");
    Method m = crc.getDeclaredMethod("crc24", long.class, int.class); m.setAccessible(true);
    Method c32 = crc.getDeclaredMethod("crc32"); c32.setAccessible(true);
    // a READY envelope on stream 2, as the payload of one self-contained segment
    byte[] payload = {(byte)0x85, 0, 0, 2, 0x02, 0, 0, 0, 0};
    int hdr = payload.length | (1 << 17);
    int h24 = (Integer) m.invoke(null, (long) hdr, 3);
    CRC32 c = (CRC32) c32.invoke(null); c.update(payload); int p32 = (int) c.getValue();
    StringBuilder sb = new StringBuilder();
    int[] hb = {hdr & 0xff, (hdr >>> 8) & 0xff, (hdr >>> 16) & 0xff, h24 & 0xff, (h24 >>> 8) & 0xff, (h24 >>> 16) & 0xff};
    for (int x : hb) sb.append(String.format("0x%02x, ", x));
    for (byte x : payload) sb.append(String.format("0x%02x, ", x & 0xff));
    int[] tb = {p32 & 0xff, (p32 >>> 8) & 0xff, (p32 >>> 16) & 0xff, (p32 >>> 24) & 0xff};
    for (int x : tb) sb.append(String.format("0x%02x, ", x));
    System.out.println("SEGMENT " + sb);
    System.out.println("CRC24(0x123456,3)=" + String.format("0x%06x", (Integer) m.invoke(null, 0x123456L, 3)));
  }
}
