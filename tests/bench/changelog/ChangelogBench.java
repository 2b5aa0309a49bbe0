// Helper of tests/bench/changelog/run_restore_bench.sh (benchmarks only): an independent
// Java reader/observer that shares no code with the C++ under test.
//
//   read      --bootstrap B --topic T
//       Reads every partition of T (read_committed), one partition after the other like a
//       restore does, from the beginning to the last stable offset. Only the fetch is
//       timed (assign .. position >= end), per partition. Prints JSON.
//   failover  --bootstrap B --group G --output OUT --input IN --partitions 0,1 --kill-pid PID
//             [--timeout-s 300] [--interval-ms 50] [--settle-ms 1000]
//       SIGKILLs PID, then watches until, for every listed partition, (a) the group's
//       committed offset of IN moves past its value at the kill and (b) a read_committed
//       reader of OUT sees a record written after the kill. Prints JSON with the seconds
//       from the kill to each.
//
// Run with the kafka-clients classpath of tests/tools (kt_client_cp).

import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ChangelogBench {
    static String bootstrap;

    static Map<String, String> parse(String[] argv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 1; i < argv.length; i++) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new IllegalArgumentException("bad argument " + argv[i]);
            m.put(argv[i].substring(2), argv[++i]);
        }
        return m;
    }

    static String req(Map<String, String> m, String k) {
        String v = m.get(k);
        if (v == null) throw new IllegalArgumentException("missing --" + k);
        return v;
    }

    public static void main(String[] argv) {
        int rc = 0;
        try {
            if (argv.length == 0) throw new IllegalArgumentException("usage: read|failover ...");
            Map<String, String> a = parse(argv);
            bootstrap = req(a, "bootstrap");
            switch (argv[0]) {
                case "read": read(a); break;
                case "failover": rc = failover(a); break;
                default: throw new IllegalArgumentException("unknown subcommand " + argv[0]);
            }
        } catch (Throwable t) {
            System.err.println("ChangelogBench: error: " + t);
            rc = 2;
        }
        System.out.flush();
        Runtime.getRuntime().halt(rc);
    }

    static KafkaConsumer<byte[], byte[]> consumer(boolean readCommitted) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, readCommitted ? "read_committed" : "read_uncommitted");
        // The same fetch sizes as the host's changelog reader (plugins/kafka/changelog_store.cpp).
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 16 * 1024 * 1024);
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 64 * 1024 * 1024);
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 10);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        p.put(ConsumerConfig.RECEIVE_BUFFER_CONFIG, 1024 * 1024);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "exactly-changelog-bench");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        return new KafkaConsumer<>(p);
    }

    static List<TopicPartition> partitionsOf(KafkaConsumer<?, ?> c, String topic) {
        List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(30));
        if (infos == null || infos.isEmpty()) throw new IllegalStateException("topic not found: " + topic);
        List<TopicPartition> tps = new ArrayList<>();
        for (PartitionInfo pi : infos) tps.add(new TopicPartition(topic, pi.partition()));
        tps.sort(Comparator.comparingInt(TopicPartition::partition));
        return tps;
    }

    // ------------------------------------------------------------------ read
    static void read(Map<String, String> a) {
        String topic = req(a, "topic");
        StringBuilder per = new StringBuilder();
        long records = 0, bytes = 0;
        double seconds = 0;
        try (KafkaConsumer<byte[], byte[]> c = consumer(true)) {
            List<TopicPartition> tps = partitionsOf(c, topic);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(60));      // LSO
            Map<TopicPartition, Long> begin = c.beginningOffsets(tps, Duration.ofSeconds(60));
            for (TopicPartition tp : tps) {
                long n = 0, b = 0;
                long t0 = System.nanoTime();
                c.assign(List.of(tp));
                c.seek(tp, begin.get(tp));
                long last = System.nanoTime();
                while (c.position(tp) < end.get(tp)) {
                    ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
                    for (ConsumerRecord<byte[], byte[]> r : rs) {
                        if (r.offset() >= end.get(tp)) continue;
                        n++;
                        b += (r.key() == null ? 0 : r.key().length) + (r.value() == null ? 0 : r.value().length);
                    }
                    if (!rs.isEmpty()) last = System.nanoTime();
                    else if (System.nanoTime() - last > TimeUnit.SECONDS.toNanos(60))
                        throw new IllegalStateException("reading " + tp + " stalled at " + c.position(tp) + "/" + end.get(tp));
                }
                double s = (System.nanoTime() - t0) / 1e9;
                records += n; bytes += b; seconds += s;
                if (per.length() > 0) per.append(',');
                per.append(String.format(Locale.ROOT, "{\"partition\":%d,\"records\":%d,\"bytes\":%d,\"seconds\":%.3f}",
                        tp.partition(), n, b, s));
            }
        }
        System.out.println(String.format(Locale.ROOT,
                "{\"topic\":\"%s\",\"records\":%d,\"bytes\":%d,\"seconds\":%.3f,\"per_partition\":[%s]}",
                topic, records, bytes, seconds, per));
    }

    // ------------------------------------------------------------------ failover
    static Map<Integer, Long> committed(Admin admin, String group, String topic, List<Integer> parts) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offs = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        Map<Integer, Long> m = new TreeMap<>();
        for (int p : parts) {
            OffsetAndMetadata om = offs.get(new TopicPartition(topic, p));
            m.put(p, om == null ? -1L : om.offset());
        }
        return m;
    }

    static int failover(Map<String, String> a) throws Exception {
        String group = req(a, "group"), in = req(a, "input"), out = req(a, "output");
        long pid = Long.parseLong(req(a, "kill-pid"));
        List<Integer> parts = new ArrayList<>();
        for (String s : req(a, "partitions").split(",")) if (!s.isBlank()) parts.add(Integer.parseInt(s.trim()));
        long timeoutMs = Long.parseLong(a.getOrDefault("timeout-s", "300")) * 1000;
        long intervalMs = Long.parseLong(a.getOrDefault("interval-ms", "50"));
        long settleMs = Long.parseLong(a.getOrDefault("settle-ms", "1000"));
        Properties ap = new Properties();
        ap.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        List<TopicPartition> outTps = new ArrayList<>();
        for (int p : parts) outTps.add(new TopicPartition(out, p));
        try (Admin admin = Admin.create(ap);
             KafkaConsumer<byte[], byte[]> hw = consumer(false);
             KafkaConsumer<byte[], byte[]> rc = consumer(true)) {
            // Warm every connection before the clock starts.
            committed(admin, group, in, parts);
            hw.endOffsets(outTps, Duration.ofSeconds(30));
            rc.assign(outTps);
            Map<Integer, Long> before = committed(admin, group, in, parts);
            Optional<ProcessHandle> ph = ProcessHandle.of(pid);
            if (ph.isEmpty() || !ph.get().isAlive()) throw new IllegalStateException("process " + pid + " is not running");
            long killNs = System.nanoTime();
            long killMs = System.currentTimeMillis();
            ph.get().destroyForcibly();   // SIGKILL
            // Whatever the dead host had in flight lands within a moment, and nobody else can
            // own its partitions before the group's session timeout: baselines taken now
            // belong to the dead host, anything past them to its successor.
            Thread.sleep(settleMs);
            Map<Integer, Long> base = committed(admin, group, in, parts);
            Map<TopicPartition, Long> outHw = hw.endOffsets(outTps, Duration.ofSeconds(30));
            for (TopicPartition tp : outTps) rc.seek(tp, outHw.get(tp));
            Map<Integer, Double> committedAt = new TreeMap<>(), visibleAt = new TreeMap<>();
            Map<Integer, Long> committedTo = new TreeMap<>(), visibleOffset = new TreeMap<>();
            long deadline = killNs + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            while ((committedAt.size() < parts.size() || visibleAt.size() < parts.size()) && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : rc.poll(Duration.ofMillis(intervalMs))) {
                    if (!visibleAt.containsKey(r.partition())) {
                        visibleAt.put(r.partition(), (System.nanoTime() - killNs) / 1e9);
                        visibleOffset.put(r.partition(), r.offset());
                        rc.pause(List.of(new TopicPartition(out, r.partition())));
                    }
                }
                if (committedAt.size() < parts.size()) {
                    Map<Integer, Long> now = committed(admin, group, in, parts);
                    double t = (System.nanoTime() - killNs) / 1e9;
                    for (int p : parts)
                        if (!committedAt.containsKey(p) && now.get(p) > base.get(p)) { committedAt.put(p, t); committedTo.put(p, now.get(p)); }
                }
            }
            StringBuilder b = new StringBuilder();
            double cMax = -1, vMax = -1;
            for (int p : parts) {
                if (b.length() > 0) b.append(',');
                double c = committedAt.getOrDefault(p, -1.0), v = visibleAt.getOrDefault(p, -1.0);
                cMax = c < 0 || cMax == -2 ? -2 : Math.max(cMax, c);   // -2: some partition never got there
                vMax = v < 0 || vMax == -2 ? -2 : Math.max(vMax, v);
                b.append(String.format(Locale.ROOT,
                        "{\"partition\":%d,\"committed_before_kill\":%d,\"committed_at_kill\":%d,\"committed_advanced_s\":%.3f,\"committed_to\":%d,"
                                + "\"output_from\":%d,\"output_visible_s\":%.3f,\"output_first_offset\":%d}",
                        p, before.get(p), base.get(p), c, committedTo.getOrDefault(p, -1L),
                        outHw.get(new TopicPartition(out, p)), v, visibleOffset.getOrDefault(p, -1L)));
            }
            System.out.println(String.format(Locale.ROOT,
                    "{\"kill_epoch_ms\":%d,\"committed_advanced_s\":%.3f,\"output_visible_s\":%.3f,\"partitions\":[%s]}",
                    killMs, cMax < 0 ? -1.0 : cMax, vMax < 0 ? -1.0 : vMax, b));
            return committedAt.size() == parts.size() && visibleAt.size() == parts.size() ? 0 : 1;
        }
    }
}
