// bench/peers/CassReadBench.java - Cassandra's own commit log reader over a
// directory tree of cdc_raw segments: the JVM peer of cdcflow's decode in the
// Cassandra part of bench/peers/run (issue 17). Test/benchmark code only: it
// is compiled with javac against the cassandra-all 5.0.x jars that
// scripts/cassandra-node fetches for the test node; nothing of it is in the
// product.
//
//   java -cp CLASSES:LIB/* CassReadBench SCHEMA.CQL ROUNDS DIR...
//
// Cassandra is initialized offline (DatabaseDescriptor.toolInitialization,
// the config file named by -Dcassandra.config: a temporary cassandra.yaml
// that bench/peers/run writes), the keyspace, its types and its tables are
// made known from SCHEMA.CQL (DESCRIBE ... WITH INTERNALS: each CREATE TABLE
// carries `WITH ID =`, the table id the segments carry) through Cassandra's
// own CQL statements applied to the offline schema, then every segment
// (CommitLog-*.log with a _cdc.idx) under each DIR is read by
// CommitLogReader.readCommitLogSegment with a handler that counts mutations,
// partition updates, rows and range tombstone bounds of the keyspace's tables and sums the bytes of
// their cells' values (so that no decoding is optimized away). ROUNDS passes
// over all segments in the same JVM: the first includes class loading and JIT
// warm-up, the later ones are the steady state.
//
// Prints one line per phase, tab separated:
//   init   SECONDS CPU_S                        (JVM start to schema loaded: start-up)
//   round  N SECONDS CPU_S MUTATIONS UPDATES ROWS CELL_BYTES SEGMENTS SKIPPED_MUTATIONS
//   hwm    PEAK_RSS_KB                          (VmHWM of the JVM at the end)
// SECONDS: wall clock, CPU_S: this process's CPU (all threads: JIT and GC too).
// The init line's third figure is the JVM's own start (to main()).
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.RangeTombstone;
import org.apache.cassandra.db.commitlog.CommitLogDescriptor;
import org.apache.cassandra.db.commitlog.CommitLogReadHandler;
import org.apache.cassandra.db.commitlog.CommitLogReader;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.ColumnData;
import org.apache.cassandra.db.rows.ComplexColumnData;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.io.util.File;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.SchemaTransformation;
import org.apache.cassandra.service.ClientState;

public final class CassReadBench {
    static final class Counter implements CommitLogReadHandler {
        final String keyspace;
        long mutations, updates, rows, cellBytes, other;

        Counter(String keyspace) { this.keyspace = keyspace; }

        @Override
        public boolean shouldSkipSegmentOnError(CommitLogReadException e) {
            if (e.permissible) return false;
            throw new RuntimeException("CommitLogReader: " + e.getMessage(), e);
        }

        @Override
        public void handleUnrecoverableError(CommitLogReadException e) {
            throw new RuntimeException("CommitLogReader: unrecoverable: " + e.getMessage(), e);
        }

        @Override
        public void handleMutation(Mutation m, int size, int entryLocation, CommitLogDescriptor desc) {
            if (!m.getKeyspaceName().equals(keyspace)) { // system tables: decoded by the reader, not counted
                other++;
                return;
            }
            mutations++;
            for (PartitionUpdate u : m.getPartitionUpdates()) {
                updates++;
                cellBytes += u.partitionKey().getKey().remaining();
                Row s = u.staticRow();
                if (!s.isEmpty()) cellBytes += row(s);
                for (Row r : u) {
                    rows++;
                    cellBytes += row(r);
                }
                // range tombstones: kept apart in the update's DeletionInfo, two bounds each
                // (cdcflow decodes them as the serialized markers, in the row sequence)
                for (Iterator<RangeTombstone> it = u.deletionInfo().rangeIterator(false); it.hasNext(); ) {
                    RangeTombstone rt = it.next();
                    rows += 2;
                    cellBytes += rt.deletedSlice().start().dataSize() + rt.deletedSlice().end().dataSize();
                }
            }
        }

        static long row(Row r) {
            long n = r.clustering().dataSize();
            for (ColumnData cd : r) {
                if (cd.column().isComplex()) {
                    for (Cell<?> c : (ComplexColumnData) cd) n += c.valueSize() + (c.path() == null ? 0 : c.path().dataSize());
                } else {
                    n += ((Cell<?>) cd).valueSize();
                }
            }
            return n;
        }
    }

    static double cpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime() / 1e9;
    }

    static double since(long t0) { return (System.nanoTime() - t0) / 1e9; }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: CassReadBench SCHEMA.CQL ROUNDS DIR...");
            System.exit(2);
        }
        double jvmUp = ManagementFactory.getRuntimeMXBean().getUptime() / 1e3; // JVM start to main()
        long t0 = System.nanoTime();
        DatabaseDescriptor.toolInitialization();
        String keyspace = null;
        ClientState state = ClientState.forInternalCalls();
        // statements of DESCRIBE output: split at ';' ending a line
        String cql = Files.readString(Paths.get(args[0]));
        for (String stmt : cql.split(";\\s*\\n")) {
            String st = stmt.strip();
            if (st.isEmpty() || !st.regionMatches(true, 0, "CREATE", 0, 6)) continue; // ALTER ... DROP etc.: none in the RF=3 case
            if (st.regionMatches(true, 0, "CREATE KEYSPACE", 0, 15)) {
                keyspace = st.split("\\s+")[2];
                // the replication is not needed to decode, and NTS would ask for a topology
                st = "CREATE KEYSPACE " + keyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}";
            }
            CQLStatement s = QueryProcessor.parseStatement(st, state);
            s.validate(state);
            Schema.instance.transform((SchemaTransformation) s);
        }
        if (keyspace == null) throw new IllegalArgumentException(args[0] + ": no CREATE KEYSPACE");
        System.out.printf("init\t%.3f\t%.3f\t%.3f%n", jvmUp + since(t0), cpu(), jvmUp);

        List<File> segs = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            try (Stream<Path> w = Files.walk(Paths.get(args[i]))) {
                w.filter(p -> p.getFileName().toString().matches("CommitLog-\\d+-\\d+\\.log"))
                 .filter(p -> Files.exists(Paths.get(p.toString().replaceAll("\\.log$", "_cdc.idx"))))
                 .sorted().forEach(p -> segs.add(new File(p.toString())));
            }
        }
        int rounds = Integer.parseInt(args[1]);
        for (int r = 1; r <= rounds; r++) {
            Counter c = new Counter(keyspace);
            CommitLogReader reader = new CommitLogReader();
            double c0 = cpu();
            long w0 = System.nanoTime();
            for (File f : segs) reader.readCommitLogSegment(c, f, CommitLogReader.ALL_MUTATIONS, false);
            long skipped = 0;
            for (var e : reader.getInvalidMutations()) skipped += e.getValue().get();
            System.out.printf("round\t%d\t%.3f\t%.3f\t%d\t%d\t%d\t%d\t%d\t%d%n", r, since(w0), cpu() - c0,
                              c.mutations, c.updates, c.rows, c.cellBytes, segs.size(), skipped + c.other);
        }
        for (String l : Files.readAllLines(Paths.get("/proc/self/status")))
            if (l.startsWith("VmHWM:")) System.out.println("hwm\t" + l.substring(6).trim().split("\\s+")[0]);
        System.out.flush();
        System.exit(0); // the offline Cassandra leaves non-daemon threads behind
    }
}
