// Independent Kafka test tool for the "exactly" project (tests and benchmarks only).
//
// Built and run by tests/tools/kafka-tool.sh against the kafka-clients jar cached by
// tests/tools/kafka-broker.sh fetch. It shares no code with the C++ under test: it is the
// referee that produces input data and checks the output with a read_committed reader.
//
// Usage: kafka-tool.sh <subcommand> --bootstrap HOST:PORT[,...] [options]
//   wait                 --timeout-s 90 [--min-brokers N] [--watch-pid PID[,PID]]
//   create-topic         --topic T --partitions N [--rf R] [--config k=v[,k=v]]
//   delete-topic         --topic T
//   produce              --topic T --count N [--partitions P] [--dup-ratio F] [--seed S]
//                        [--size BYTES] [--keyed | --null-keys] [--dup-window W] [--omit-dups] [--dup-variant]
//                        [--timestamp-ms T] (every record's CreateTime; default: the producer's clock)
//                        [--header NAME=VALUE] (the same header on every record)
//                        [--rate RECORDS_PER_S [--warmup-topic W --warmup-s S]] [--progress-s 5]
//                        [--stop-file F] (ends the input early once F exists; --count is then a bound)
//                        [--transactional-id X [--abort | --leave-open] [--txn-timeout-ms MS]]
//   verify               --input-topic IN --output-topic OUT [--mode copy|dedupe]
//                        [--id-field messageId] [--stall-timeout-s 60] [--expect-input N]
//                        [--allow-empty] [--examples 10]
//   marker-check         --topic T [--timeout-s 20]
//   count                --topic T [--read-committed]
//   end-offsets          --topic T
//   topic-config         --topic T              one name=value line per config entry
//   alter-topic-config   --topic T --config k=v[,k=v]   (incrementalAlterConfigs, SET)
//   add-acl              --topic T | --group G | --transactional-id-prefix P --principal User:NAME --operation WRITE
//                        --permission DENY|ALLOW  (from any host; the cluster needs an authorizer)
//   consume-group-offsets --group G --topic T
//   reset-group-offsets  --group G --topic T [--to N]   (every partition to offset N, default 0;
//                        the group must be empty: an operator's --reset-offsets)
//   transactions         (lists transactional ids and their state; open ones are flagged)
//   hold-offsets         --group G --topic T --client-id C [--txn-timeout-ms 300000]
//                        [--session-timeout-ms 6000]
//                        (a stand-in for a host killed mid-commit: joins group G as client
//                        C, sends its partitions' offsets to an open transaction of
//                        transactional id C, prints "holding", then stays in the group
//                        until killed)
//   latency              --topic T [--warmup-s 10] [--expect-file F] [--idle-timeout-s 60]
//                        [--warmup-topic W --warmup-records N]
//                        (end-to-end latency: read_committed, now - record timestamp)
//
// Every subcommand also takes --command-config FILE (or $KAFKA_TOOL_COMMAND_CONFIG): Java
// client properties added to every client, e.g. security.protocol=SASL_SSL and its settings.
//
// Exit codes: 0 ok / check passed, 1 check failed, 2 usage or runtime error.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.*;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KafkaTool {

    static final class UsageException extends RuntimeException {
        UsageException(String m) { super(m); }
    }

    // ------------------------------------------------------------------ arguments
    static final class Args {
        final Map<String, String> opts = new HashMap<>();
        final Set<String> flags = new HashSet<>();
        static final Set<String> FLAG_NAMES = Set.of("keyed", "read-committed", "verbose", "omit-dups", "dup-variant", "abort", "leave-open", "allow-empty", "allow-duplicates", "grow", "null-keys");

        Args(String[] argv, int from) {
            for (int i = from; i < argv.length; i++) {
                String a = argv[i];
                if (!a.startsWith("--")) throw new UsageException("unexpected argument: " + a);
                String k = a.substring(2);
                int eq = k.indexOf('=');
                if (eq >= 0) { opts.put(k.substring(0, eq), k.substring(eq + 1)); continue; }
                if (FLAG_NAMES.contains(k)) { flags.add(k); continue; }
                if (i + 1 >= argv.length) throw new UsageException("missing value for --" + k);
                opts.put(k, argv[++i]);
            }
        }
        String req(String k) {
            String v = opts.get(k);
            if (v == null) throw new UsageException("missing required option --" + k);
            return v;
        }
        String get(String k, String d) { return opts.getOrDefault(k, d); }
        long getLong(String k, long d) { String v = opts.get(k); return v == null ? d : Long.parseLong(v); }
        int getInt(String k, int d) { String v = opts.get(k); return v == null ? d : Integer.parseInt(v); }
        double getDouble(String k, double d) { String v = opts.get(k); return v == null ? d : Double.parseDouble(v); }
        boolean flag(String k) { return flags.contains(k); }
    }

    static String bootstrap;
    static boolean verbose;
    static final Properties commandConfig = new Properties();

    public static void main(String[] argv) {
        int rc;
        try {
            rc = run(argv);
        } catch (UsageException e) {
            System.err.println("kafka-tool: " + e.getMessage());
            System.err.println("usage: kafka-tool.sh <wait|create-topic|delete-topic|produce|verify|marker-check|count|end-offsets|topic-config|consume-group-offsets|transactions|hold-offsets|latency> --bootstrap B [options]");
            rc = 2;
        } catch (Throwable t) {
            System.err.println("kafka-tool: error: " + t);
            Throwable c = t.getCause();
            while (c != null) { System.err.println("  caused by: " + c); c = c.getCause(); }
            if (verbose) t.printStackTrace();
            rc = 2;
        }
        System.out.flush();
        System.err.flush();
        // Client threads (admin, producer network threads) must not keep us alive.
        Runtime.getRuntime().halt(rc);
    }

    static int run(String[] argv) throws Exception {
        if (argv.length == 0) throw new UsageException("no subcommand");
        String cmd = argv[0];
        Args a = new Args(argv, 1);
        verbose = a.flag("verbose");
        bootstrap = a.opts.getOrDefault("bootstrap", System.getenv("KAFKA_BOOTSTRAP"));
        if (bootstrap == null || bootstrap.isEmpty()) throw new UsageException("missing --bootstrap (or KAFKA_BOOTSTRAP)");
        String cc = a.opts.getOrDefault("command-config", System.getenv("KAFKA_TOOL_COMMAND_CONFIG"));
        if (cc != null && !cc.isEmpty()) {
            try (java.io.Reader r = java.nio.file.Files.newBufferedReader(java.nio.file.Path.of(cc))) {
                commandConfig.load(r);
            }
        }
        switch (cmd) {
            case "wait": return cmdWait(a);
            case "create-topic": return cmdCreateTopic(a);
            case "delete-topic": return cmdDeleteTopic(a);
            case "produce": return cmdProduce(a);
            case "verify": return cmdVerify(a);
            case "marker-check": return cmdMarkerCheck(a);
            case "count": return cmdCount(a);
            case "end-offsets": return cmdEndOffsets(a);
            case "topic-config": return cmdTopicConfig(a);
            case "alter-topic-config": return cmdAlterTopicConfig(a);
            case "add-acl": return cmdAddAcl(a);
            case "consume-group-offsets": return cmdGroupOffsets(a);
            case "reset-group-offsets": return cmdResetGroupOffsets(a);
            case "transactions": return cmdTransactions(a);
            case "hold-offsets": return cmdHoldOffsets(a);
            case "latency": return cmdLatency(a);
            default: throw new UsageException("unknown subcommand: " + cmd);
        }
    }

    // ------------------------------------------------------------------ clients
    static Properties baseProps() {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.CLIENT_DNS_LOOKUP_CONFIG, "use_all_dns_ips");
        p.putAll(commandConfig);
        return p;
    }

    static Admin admin(int requestTimeoutMs) {
        Properties p = baseProps();
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, requestTimeoutMs);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Math.max(requestTimeoutMs, 60000));
        p.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, 200);
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 1000);
        return Admin.create(p);
    }

    static KafkaConsumer<byte[], byte[]> consumer(boolean readCommitted) {
        Properties p = baseProps();
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, readCommitted ? "read_committed" : "read_uncommitted");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 64 * 1024 * 1024);
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 8 * 1024 * 1024);
        p.put(ConsumerConfig.RECEIVE_BUFFER_CONFIG, 1024 * 1024);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "exactly-kafka-tool");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false"); // a typo must not create a topic
        return new KafkaConsumer<>(p);
    }

    static List<TopicPartition> partitionsOf(KafkaConsumer<?, ?> c, String topic) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(10));
                if (infos != null && !infos.isEmpty()) {
                    List<TopicPartition> tps = new ArrayList<>();
                    for (PartitionInfo pi : infos) tps.add(new TopicPartition(topic, pi.partition()));
                    tps.sort(Comparator.comparingInt(TopicPartition::partition));
                    return tps;
                }
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                // retry until deadline
            }
            if (System.nanoTime() > deadline) throw new IllegalStateException("topic not found: " + topic);
            sleep(200);
        }
    }

    static void sleep(long ms) {
        try { Thread.sleep(ms); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
    }

    /** Paced sending: record {@code n} is due at {@code t0 + n / rate}; sleeps once >= 5 ms ahead. */
    static void pace(long t0Ns, long n, double rate) {
        long aheadNs = t0Ns + (long) (n * 1e9 / rate) - System.nanoTime();
        if (aheadNs >= 5_000_000L) sleep(aheadNs / 1_000_000L);
    }

    static String jsonStr(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                default:
                    if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch)); else b.append(ch);
            }
        }
        return b.append('"').toString();
    }

    // ------------------------------------------------------------------ wait
    static int cmdWait(Args a) throws Exception {
        long timeoutS = a.getLong("timeout-s", 90);
        int minBrokers = a.getInt("min-brokers", 1);
        List<Long> pids = new ArrayList<>();
        for (String s : a.get("watch-pid", "").split(",")) if (!s.isBlank()) pids.add(Long.parseLong(s.trim()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
        String last = "no answer yet";
        try (Admin admin = admin(3000)) {
            while (true) {
                for (long pid : pids) {
                    Optional<ProcessHandle> ph = ProcessHandle.of(pid);
                    if (ph.isEmpty() || !ph.get().isAlive()) {
                        System.err.println("kafka-tool wait: watched process " + pid + " exited");
                        return 3;
                    }
                }
                try {
                    DescribeClusterResult r = admin.describeCluster(new DescribeClusterOptions().timeoutMs(3000));
                    Collection<Node> nodes = r.nodes().get(4, TimeUnit.SECONDS);
                    Node controller = r.controller().get(4, TimeUnit.SECONDS);
                    if (nodes.size() >= minBrokers) {
                        System.out.println("{\"brokers\":" + nodes.size() + ",\"controller\":"
                                + (controller == null ? -1 : controller.id()) + ",\"cluster_id\":"
                                + jsonStr(String.valueOf(r.clusterId().get(4, TimeUnit.SECONDS))) + "}");
                        return 0;
                    }
                    last = "only " + nodes.size() + " of " + minBrokers + " brokers alive";
                } catch (ExecutionException | TimeoutException e) {
                    last = String.valueOf(e.getCause() != null ? e.getCause() : e);
                }
                if (System.nanoTime() > deadline) {
                    System.err.println("kafka-tool wait: cluster at " + bootstrap + " did not answer within "
                            + timeoutS + " s (" + last + ")");
                    return 1;
                }
                sleep(250);
            }
        }
    }

    // ------------------------------------------------------------------ topics
    static int cmdCreateTopic(Args a) throws Exception {
        String topic = a.req("topic");
        int partitions = a.getInt("partitions", 4);
        Optional<Short> rf = a.opts.containsKey("rf") ? Optional.of((short) a.getInt("rf", 1)) : Optional.empty();
        Map<String, String> configs = new HashMap<>();
        for (String kv : a.get("config", "").split(",")) {
            if (kv.isBlank()) continue;
            int eq = kv.indexOf('=');
            if (eq <= 0) throw new UsageException("bad --config entry: " + kv);
            configs.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
        }
        try (Admin admin = admin(15000)) {
            NewTopic nt = new NewTopic(topic, Optional.of(partitions), rf).configs(configs);
            boolean existed = false;
            try {
                admin.createTopics(List.of(nt)).all().get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TopicExistsException) existed = true;
                else throw e;
            }
            // --grow: an existing topic with fewer partitions gets more (what an operator
            // does with kafka-topics.sh --alter --partitions N).
            if (existed && a.flag("grow")) {
                int now = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic).partitions().size();
                if (now < partitions)
                    admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(partitions))).all().get(60, TimeUnit.SECONDS);
            }
            // Wait until every partition has a leader, so that clients started right after
            // this command do not race against topic creation.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            int actual = -1;
            while (true) {
                try {
                    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
                    actual = d.partitions().size();
                    boolean grown = !(existed && a.flag("grow") && actual < partitions);
                    boolean allLeaders = grown && d.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty());
                    if (allLeaders) break;
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) throw e;
                }
                if (System.nanoTime() > deadline) throw new IllegalStateException("topic " + topic + " has no leaders after 60 s");
                sleep(100);
            }
            if (existed && actual != partitions)
                System.err.println("kafka-tool: warning: topic " + topic + " already exists with " + actual + " partitions (wanted " + partitions + ")");
            System.out.println("{\"topic\":" + jsonStr(topic) + ",\"partitions\":" + actual + ",\"created\":" + !existed + "}");
            return 0;
        }
    }

    static int cmdDeleteTopic(Args a) throws Exception {
        String topic = a.req("topic");
        try (Admin admin = admin(15000)) {
            boolean existed = true;
            try {
                admin.deleteTopics(List.of(topic)).all().get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof UnknownTopicOrPartitionException) existed = false;
                else throw e;
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (existed) {
                Set<String> names = admin.listTopics().names().get(10, TimeUnit.SECONDS);
                if (!names.contains(topic)) break;
                if (System.nanoTime() > deadline) throw new IllegalStateException("topic " + topic + " still listed 60 s after delete");
                sleep(100);
            }
            System.out.println("{\"topic\":" + jsonStr(topic) + ",\"deleted\":" + existed + "}");
            return 0;
        }
    }

    // ------------------------------------------------------------------ produce
    static final char[] FILL = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".toCharArray();

    static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** The value of the ORIGINAL record number {@code seq}: deterministic in (seed, seq). */
    static byte[] originalValue(long seed, long seq, int size) {
        return recordValue(seed, seq, seq, size);
    }

    /**
     * A record whose messageId is that of original record {@code idSeq} and whose "seq" and
     * payload are those of record {@code seq}. idSeq == seq is an original record; idSeq != seq
     * is a duplicate that repeats the id but not the payload (--dup-variant), so that a reader
     * can tell which occurrence of an id a dedupe let through.
     */
    static byte[] recordValue(long seed, long idSeq, long seq, int size) {
        long h1 = mix64(seed * 0x9E3779B97F4A7C15L + idSeq);
        long h2 = mix64(h1 ^ 0x5DEECE66DL);
        // RFC 4122 version 4 layout so it looks like any other UUID.
        long msb = (h1 & ~0xF000L) | 0x4000L;
        long lsb = (h2 & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
        String id = new UUID(msb, lsb).toString();
        StringBuilder b = new StringBuilder(Math.max(size, 96));
        b.append("{\"messageId\":\"").append(id).append("\",\"seq\":").append(seq).append(",\"payload\":\"");
        int fill = Math.max(0, size - b.length() - 2);
        long r = mix64(h2 + seq);
        for (int i = 0; i < fill; i++) {
            if ((i & 7) == 0) r = mix64(r + i);
            b.append(FILL[(int) ((r >>> ((i & 7) * 8)) & 0xFF) % FILL.length]);
        }
        b.append("\"}");
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    static int cmdProduce(Args a) throws Exception {
        String topic = a.req("topic");
        long count = a.getLong("count", -1);
        if (count < 0) throw new UsageException("missing required option --count");
        double dupRatio = a.getDouble("dup-ratio", 0.0);
        long seed = a.getLong("seed", 42);
        int size = a.getInt("size", 150);
        boolean keyed = a.flag("keyed");
        // Records without a key (a compacted topic refuses them), round robin over partitions.
        boolean nullKeys = a.flag("null-keys");
        if (keyed && nullKeys) throw new UsageException("--keyed and --null-keys exclude each other");
        Long timestampMs = a.opts.containsKey("timestamp-ms") ? a.getLong("timestamp-ms", 0) : null;
        String header = a.opts.get("header");
        if (header != null && header.indexOf('=') <= 0) throw new UsageException("--header wants NAME=VALUE");
        long dupWindow = a.getLong("dup-window", 0); // 0 = any earlier original record
        if (dupRatio < 0 || dupRatio >= 1) throw new UsageException("--dup-ratio must be in [0,1)");
        // A duplicate repeats an earlier record's id AND value; with --dup-variant only its id
        // (its own seq and payload), so "the value of the first occurrence" is checkable.
        boolean dupVariant = a.flag("dup-variant");
        // --rate N: at most N records per second on average (0 = as fast as possible), paced
        // in small steps so the topic grows steadily while the system under test runs.
        double rate = a.getDouble("rate", 0.0);
        if (rate < 0) throw new UsageException("--rate must be >= 0");
        long progressNs = TimeUnit.MILLISECONDS.toNanos((long) (a.getDouble("progress-s", 5.0) * 1000));
        // --stop-file F: a test that bounces brokers for as long as they take to come back
        // stops the input once it is done, instead of guessing a --count that outlasts them.
        java.nio.file.Path stopFile = a.opts.containsKey("stop-file") ? java.nio.file.Paths.get(a.opts.get("stop-file")) : null;

        Properties p = baseProps();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, a.getInt("linger-ms", 10));
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 128L * 1024 * 1024);
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 300000);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, a.get("compression", "none"));
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "exactly-kafka-tool-producer");

        boolean omitDups = a.flag("omit-dups");      // the dedupe reference of the same stream
        String txnId = a.opts.get("transactional-id");
        boolean abort = a.flag("abort"), leaveOpen = a.flag("leave-open");
        if ((abort || leaveOpen) && txnId == null) throw new UsageException("--abort/--leave-open need --transactional-id");
        if (txnId != null) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
            p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, a.getInt("txn-timeout-ms", 60000));
        }

        SplittableRandom rnd = new SplittableRandom(seed ^ 0x2545F4914F6CDD1DL);
        long[] originals = new long[(int) Math.min(count, Integer.MAX_VALUE - 8)];
        int nOriginals = 0;
        long sent = 0;
        AtomicLong acked = new AtomicLong();
        AtomicReference<Exception> firstError = new AtomicReference<>();
        long t0 = System.nanoTime();
        // Worst send-to-ack time per second of sending (paced runs): the part of an
        // end-to-end latency spent before the input reached the broker.
        AtomicLongArray worstAck = new AtomicLongArray(rate > 0 ? 4096 : 0);
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
        try {
            int actual = producer.partitionsFor(topic).size();
            int partitions = a.opts.containsKey("partitions") ? a.getInt("partitions", 1) : actual;
            if (!keyed && partitions > actual)
                throw new UsageException("--partitions " + partitions + " but topic " + topic + " has " + actual);
            if (txnId != null) { producer.initTransactions(); producer.beginTransaction(); }
            Callback cb = (md, ex) -> {
                if (ex != null) firstError.compareAndSet(null, ex); else acked.incrementAndGet();
            };
            // A paced run measures what is downstream of this producer: give its JVM (and
            // the broker's produce path) the same traffic first, on a topic nobody reads,
            // so that compiling them does not take the CPU in the run's first seconds.
            String warmTopic = a.opts.get("warmup-topic");
            double warmS = a.getDouble("warmup-s", 0.0);
            if (warmTopic != null && warmS > 0 && rate > 0) {
                long w0 = System.nanoTime(), wEnd = w0 + (long) (warmS * 1e9);
                for (long w = 0; System.nanoTime() < wEnd && firstError.get() == null; w++) {
                    pace(w0, w, rate);
                    byte[] value = originalValue(seed ^ 0x5DEECE66DL, w, size);
                    producer.send(new ProducerRecord<>(warmTopic, Arrays.copyOfRange(value, 14, 50), value),
                            (md, ex) -> { if (ex != null) firstError.compareAndSet(null, ex); });
                }
                producer.flush();
                if (firstError.get() != null) throw firstError.get();
            }
            // The pace starts at the first send, not before the producer's metadata round
            // trips: otherwise a paced run opens with a burst that makes up for them.
            t0 = System.nanoTime();
            long nextProgress = System.nanoTime() + progressNs;
            for (long i = 0; i < count; i++) {
                if (rate > 0) {
                    pace(t0, sent, rate);
                }
                if (stopFile != null && (i & 1023) == 0 && java.nio.file.Files.exists(stopFile)) break;
                if (progressNs > 0 && System.nanoTime() >= nextProgress) {
                    double el = (System.nanoTime() - t0) / 1e9;
                    System.err.println(String.format(Locale.ROOT,
                            "kafka-tool produce: %s: %d/%d sent, %d acked, %.1f s, %.0f records/s",
                            topic, sent, count, acked.get(), el, sent / Math.max(el, 1e-9)));
                    nextProgress = System.nanoTime() + progressNs;
                }
                long src;
                boolean dup = nOriginals > 0 && dupRatio > 0 && rnd.nextDouble() < dupRatio;
                if (dup) {
                    int lo = dupWindow > 0 ? (int) Math.max(0, nOriginals - dupWindow) : 0;
                    src = originals[lo + rnd.nextInt(nOriginals - lo)];
                    if (omitDups) continue;
                } else {
                    src = i;
                    originals[nOriginals++] = i;
                }
                byte[] value = dup && dupVariant ? recordValue(seed, src, i, size) : originalValue(seed, src, size);
                ProducerRecord<byte[], byte[]> rec;
                if (keyed) {
                    // key = messageId (bytes 14..50 of the value), default partitioner.
                    byte[] key = Arrays.copyOfRange(value, 14, 50);
                    rec = new ProducerRecord<>(topic, null, timestampMs, key, value);
                } else {
                    byte[] key = nullKeys ? null : Long.toString(i).getBytes(StandardCharsets.UTF_8);
                    rec = new ProducerRecord<>(topic, (int) (i % partitions), timestampMs, key, value);
                }
                if (header != null) {
                    int eq = header.indexOf('=');
                    rec.headers().add(header.substring(0, eq), header.substring(eq + 1).getBytes(StandardCharsets.UTF_8));
                }
                if (worstAck.length() > 0) {
                    long at = System.nanoTime();
                    int sec = (int) Math.min(worstAck.length() - 1, (at - t0) / 1_000_000_000L);
                    producer.send(rec, (md, ex) -> {
                        cb.onCompletion(md, ex);
                        long ms = (System.nanoTime() - at) / 1_000_000L;
                        worstAck.accumulateAndGet(sec, ms, Math::max);
                    });
                } else {
                    producer.send(rec, cb);
                }
                sent++;
                if (firstError.get() != null) break;
            }
            producer.flush();
            if (txnId != null && firstError.get() == null) {
                if (leaveOpen) {
                    // Leave the transaction open on purpose (tests of hanging-transaction
                    // detection): exit without commit/abort; it times out on the broker.
                    System.out.println("{\"topic\":" + jsonStr(topic) + ",\"produced\":" + acked.get() + ",\"transaction\":\"open\"}");
                    return 0;
                }
                if (abort) producer.abortTransaction(); else producer.commitTransaction();
            }
        } finally {
            if (!leaveOpen) producer.close(Duration.ofSeconds(30));
        }
        if (firstError.get() != null) {
            System.err.println("kafka-tool produce: send failed: " + firstError.get());
            return 2;
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        if (worstAck.length() > 0) {
            StringBuilder tl = new StringBuilder("kafka-tool produce: worst send-to-ack ms per second:");
            for (int i = 0; i < worstAck.length() && i < secs; i++) tl.append(' ').append(i).append(':').append(worstAck.get(i));
            System.err.println(tl);
        }
        System.out.println("{\"topic\":" + jsonStr(topic) + ",\"produced\":" + acked.get() + ",\"distinct_ids\":" + nOriginals
                + ",\"duplicates\":" + (acked.get() - nOriginals)
                + (txnId != null ? ",\"transaction\":\"" + (abort ? "aborted" : "committed") + "\"" : "")
                + ",\"seconds\":" + String.format(Locale.ROOT, "%.2f", secs) + "}");
        return acked.get() == sent ? 0 : 2;
    }

    // ------------------------------------------------------------------ reading a topic
    interface RecordSink { void accept(int partition, long offset, byte[] key, byte[] value); }

    /**
     * Reads every record of {@code topic} from the beginning up to the end offsets captured
     * at the start (high watermark, or last stable offset under read_committed). Counts
     * records, not offsets. Returns the number of records read.
     */
    static long readTopic(String topic, boolean readCommitted, long stallTimeoutS, RecordSink sink) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(readCommitted)) {
            List<TopicPartition> tps = partitionsOf(c, topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(60));
            Map<TopicPartition, Long> begin = c.beginningOffsets(tps, Duration.ofSeconds(60));
            Set<TopicPartition> pending = new HashSet<>();
            for (TopicPartition tp : tps) if (end.get(tp) > begin.get(tp)) pending.add(tp); else c.pause(List.of(tp));
            long n = 0;
            long lastProgress = System.nanoTime();
            while (!pending.isEmpty()) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    if (r.offset() >= end.get(tp)) continue; // beyond the snapshot: ignore
                    sink.accept(r.partition(), r.offset(), r.key(), r.value());
                    n++;
                }
                boolean progressed = !recs.isEmpty();
                for (Iterator<TopicPartition> it = pending.iterator(); it.hasNext();) {
                    TopicPartition tp = it.next();
                    if (c.position(tp) >= end.get(tp)) { it.remove(); c.pause(List.of(tp)); progressed = true; }
                }
                if (progressed) lastProgress = System.nanoTime();
                else if (System.nanoTime() - lastProgress > TimeUnit.SECONDS.toNanos(stallTimeoutS)) {
                    StringBuilder b = new StringBuilder();
                    for (TopicPartition tp : pending) b.append(' ').append(tp).append(" at ").append(c.position(tp)).append("/").append(end.get(tp));
                    throw new IllegalStateException("reading " + topic + " stalled for " + stallTimeoutS + " s:" + b);
                }
            }
            return n;
        }
    }

    /** 64-bit hash of a byte array (null and empty differ). */
    static long hash64(byte[] v) {
        return v == null ? 0x6A09E667F3BCC908L : hash64(v, 0, v.length);
    }

    static long hash64(byte[] v, int off, int len) {
        long h = 0x9E3779B97F4A7C15L ^ (len * 0xC2B2AE3D27D4EB4FL);
        int i = off, end = off + len;
        for (; i + 8 <= end; i += 8) {
            long w = (v[i] & 0xFFL) | (v[i + 1] & 0xFFL) << 8 | (v[i + 2] & 0xFFL) << 16 | (v[i + 3] & 0xFFL) << 24
                    | (v[i + 4] & 0xFFL) << 32 | (v[i + 5] & 0xFFL) << 40 | (v[i + 6] & 0xFFL) << 48 | (v[i + 7] & 0xFFL) << 56;
            h = mix64(h ^ mix64(w + 0x632BE59BD9B4E019L));
        }
        long w = 0;
        for (int s = 0; i < end; i++, s += 8) w |= (v[i] & 0xFFL) << s;
        return mix64(h ^ mix64(w ^ 0x85EBCA77C2B2AE63L));
    }

    /**
     * Finds the value of JSON field {@code needle} (a quoted name) in a record value: a string
     * (without quotes) or a bare token. Returns (start << 32 | end), or -1 if absent.
     */
    static long fieldRange(byte[] v, byte[] needle) {
        if (v == null) return -1;
        outer:
        for (int i = 0; i + needle.length <= v.length; i++) {
            for (int j = 0; j < needle.length; j++) if (v[i + j] != needle[j]) continue outer;
            int k = i + needle.length;
            while (k < v.length && (v[k] == ' ' || v[k] == '\t' || v[k] == '\n' || v[k] == '\r')) k++;
            if (k >= v.length || v[k] != ':') continue;
            k++;
            while (k < v.length && (v[k] == ' ' || v[k] == '\t' || v[k] == '\n' || v[k] == '\r')) k++;
            if (k >= v.length) return -1;
            if (v[k] == '"') {
                int s = ++k;
                while (k < v.length && v[k] != '"') { if (v[k] == '\\') k++; k++; }
                return ((long) s << 32) | Math.min(k, v.length);
            }
            int s = k;
            while (k < v.length && v[k] != ',' && v[k] != '}' && v[k] != ' ' && v[k] != ']') k++;
            return ((long) s << 32) | k;
        }
        return -1;
    }

    static String fieldString(byte[] v, long range) {
        int s = (int) (range >>> 32), e = (int) range;
        return new String(v, s, e - s, StandardCharsets.UTF_8);
    }

    /** Open-addressing long -> long map (no boxing: a few tens of bytes per entry). */
    static final class LongLongMap {
        long[] keys, vals;
        boolean[] used;
        int size, mask;

        LongLongMap(int expected) {
            int cap = 16;
            while (cap < expected * 2) cap <<= 1;
            alloc(cap);
        }
        private void alloc(int cap) { keys = new long[cap]; vals = new long[cap]; used = new boolean[cap]; mask = cap - 1; }
        private int find(long k) {
            int i = (int) mix64(k) & mask;
            while (used[i] && keys[i] != k) i = (i + 1) & mask;
            return i;
        }
        boolean contains(long k) { return used[find(k)]; }
        long get(long k, long dflt) { int i = find(k); return used[i] ? vals[i] : dflt; }
        void put(long k, long v) {
            int i = find(k);
            if (!used[i]) { used[i] = true; keys[i] = k; size++; vals[i] = v; grow(); } else vals[i] = v;
        }
        /** Adds d (absent counts as 0) and returns the new value. */
        long add(long k, long d) {
            int i = find(k);
            if (!used[i]) { used[i] = true; keys[i] = k; vals[i] = d; size++; grow(); return d; }
            return vals[i] += d;
        }
        private void grow() {
            if (size * 10L < (mask + 1) * 6L) return;
            long[] ok = keys, ov = vals;
            boolean[] ou = used;
            alloc((mask + 1) * 2);
            for (int j = 0; j < ok.length; j++) if (ou[j]) { int i = find(ok[j]); used[i] = true; keys[i] = ok[j]; vals[i] = ov[j]; }
        }
        interface Visitor { void visit(long k, long v); }
        void forEach(Visitor f) { for (int j = 0; j < keys.length; j++) if (used[j]) f.visit(keys[j], vals[j]); }
    }

    // ------------------------------------------------------------------ verify
    /** Position of a value in the input: partition and index within that partition. */
    static long pos(int partition, int index) { return ((long) partition << 32) | (index & 0xFFFFFFFFL); }

    /** Input positions of each value: the first in a LongLongMap, repeats (rare) in a side map. */
    static final class Positions {
        final LongLongMap first = new LongLongMap(1 << 16);
        final HashMap<Long, long[]> more = new HashMap<>();   // {count, p1, p2, ...}
        void add(long h, long p) {
            if (!first.contains(h)) { first.put(h, p); return; }
            more.compute(h, (k, arr) -> {
                if (arr == null) arr = new long[4];
                int n = (int) arr[0];
                if (n + 2 > arr.length) arr = Arrays.copyOf(arr, arr.length * 2);
                arr[n + 1] = p;
                arr[0] = n + 1;
                return arr;
            });
        }
        /** Smallest input index >= next in partition part, or -1; -2 if the value never occurs in part. */
        long match(long h, int part, int next) {
            if (!first.contains(h)) return -2;
            long best = -1;
            boolean any = false;
            long[] extra = more.get(h);
            int n = 1 + (extra == null ? 0 : (int) extra[0]);
            for (int i = 0; i < n; i++) {
                long ps = i == 0 ? first.get(h, 0) : extra[i];
                if ((int) (ps >>> 32) != part) continue;
                any = true;
                int idx = (int) ps;
                if (idx >= next && (best < 0 || idx < best)) best = idx;
            }
            return any ? best : -2;
        }
    }

    static int cmdVerify(Args a) throws Exception {
        String in = a.req("input-topic");
        String out = a.req("output-topic");
        String mode = a.get("mode", "copy");
        if (!mode.equals("copy") && !mode.equals("dedupe")) throw new UsageException("--mode must be copy or dedupe");
        String idField = a.get("id-field", "messageId");
        byte[] needle = ("\"" + idField + "\"").getBytes(StandardCharsets.UTF_8);
        long stall = a.getLong("stall-timeout-s", 60);
        int maxExamples = a.getInt("examples", 10);
        boolean dedupe = mode.equals("dedupe");

        // ---- input. copy: count[valueHash]; dedupe: firstValue[idHash] = valueHash of the
        // first occurrence. Positions (for the order check) of counted values.
        LongLongMap inCount = new LongLongMap(1 << 16);
        LongLongMap firstValue = new LongLongMap(1 << 16);
        Positions positions = new Positions();
        int[] perPartIndex = new int[1 << 16];
        long[] badInput = {0};
        long nIn = readTopic(in, true, stall, (part, off, k, v) -> {
            long h = hash64(v);
            int idx = perPartIndex[part]++;
            if (dedupe) {
                long r = fieldRange(v, needle);
                if (r < 0) { badInput[0]++; return; }
                long idh = hash64(v, (int) (r >>> 32), (int) r - (int) (r >>> 32));
                if (firstValue.contains(idh)) return;
                firstValue.put(idh, h);
                positions.add(h, pos(part, idx));
            } else {
                inCount.add(h, 1);
                positions.add(h, pos(part, idx));
            }
        });

        // ---- output
        LongLongMap outCount = new LongLongMap(1 << 16);   // copy: per value; dedupe: per id
        long[] extra = {0}, wrongPayload = {0}, orderViolations = {0};
        List<String> extraEx = new ArrayList<>(), wrongEx = new ArrayList<>(), orderEx = new ArrayList<>();
        int[] nextIdx = new int[1 << 16]; // output partition q -> next expected index in input partition q
        long nOut = readTopic(out, true, stall, (part, off, k, v) -> {
            long h = hash64(v);
            if (dedupe) {
                long r = fieldRange(v, needle);
                long idh = r < 0 ? 0 : hash64(v, (int) (r >>> 32), (int) r - (int) (r >>> 32));
                if (r < 0 || !firstValue.contains(idh)) {
                    extra[0]++;
                    if (extraEx.size() < maxExamples) extraEx.add("output p" + part + "@" + off + " " + preview(v));
                    return;
                }
                long c = outCount.add(idh, 1);
                if (firstValue.get(idh, 0) != h) {
                    wrongPayload[0]++;
                    if (wrongEx.size() < maxExamples) wrongEx.add("output p" + part + "@" + off + " " + preview(v));
                    return;
                }
                if (c > 1) return; // a duplicate: counted below, not an order matter
            } else {
                long c = outCount.add(h, 1);
                long inC = inCount.get(h, 0);
                if (inC == 0) {
                    extra[0]++;
                    if (extraEx.size() < maxExamples) extraEx.add("output p" + part + "@" + off + " " + preview(v));
                    return;
                }
                if (c > inC) return; // an excess copy: a duplicate, not an order matter
            }
            // Order: among output records of partition q that come from input partition q,
            // the input indices must increase (greedy match to the earliest unused occurrence).
            long m = positions.match(h, part, nextIdx[part]);
            if (m == -2) return; // came from another input partition: no order relation
            if (m >= 0) nextIdx[part] = (int) m + 1;
            else {
                orderViolations[0]++;
                if (orderEx.size() < maxExamples) orderEx.add("output p" + part + "@" + off + " " + preview(v));
            }
        });

        long[] missing = {0}, duplicated = {0};
        Set<Long> missH = new HashSet<>(), dupH = new HashSet<>();
        long distinct;
        if (dedupe) {
            distinct = firstValue.size;
            firstValue.forEach((idh, vh) -> {
                long c = outCount.get(idh, 0);
                if (c == 0) { missing[0]++; if (missH.size() < maxExamples) missH.add(idh); }
                else if (c > 1) { duplicated[0] += c - 1; if (dupH.size() < maxExamples) dupH.add(idh); }
            });
        } else {
            distinct = inCount.size;
            inCount.forEach((vh, n) -> {
                long c = outCount.get(vh, 0);
                if (c < n) { missing[0] += n - c; if (missH.size() < maxExamples) missH.add(vh); }
                else if (c > n) { duplicated[0] += c - n; if (dupH.size() < maxExamples) dupH.add(vh); }
            });
        }
        // Second pass (only on failure) to show the records behind the hashes.
        List<String> missEx = new ArrayList<>(), dupEx = new ArrayList<>();
        if (!missH.isEmpty()) {
            readTopic(in, true, stall, (part, off, k, v) -> {
                long key = hash64(v);
                if (dedupe) {
                    long r = fieldRange(v, needle);
                    if (r < 0) return;
                    key = hash64(v, (int) (r >>> 32), (int) r - (int) (r >>> 32));
                }
                if (missH.remove(key)) missEx.add("input p" + part + "@" + off + " " + preview(v));
            });
        }
        if (!dupH.isEmpty()) {
            readTopic(out, true, stall, (part, off, k, v) -> {
                long key = hash64(v);
                if (dedupe) {
                    long r = fieldRange(v, needle);
                    if (r < 0) return;
                    key = hash64(v, (int) (r >>> 32), (int) r - (int) (r >>> 32));
                }
                if (dupH.contains(key)) dupEx.add("output p" + part + "@" + off + " " + preview(v));
            });
        }
        printExamples("missing", missEx);
        printExamples("duplicated", dupEx);
        printExamples("extra", extraEx);
        printExamples("wrong_payload", wrongEx);
        printExamples("order_violation", orderEx);
        long expect = a.getLong("expect-input", -1);
        long inputMismatch = expect >= 0 && expect != nIn ? 1 : 0;
        if (inputMismatch != 0) System.err.println("verify: input topic has " + nIn + " committed records, expected " + expect);
        if (nIn == 0 && !a.flag("allow-empty")) {
            System.err.println("verify: input topic " + in + " has no committed records (pass --allow-empty if that is intended)");
            inputMismatch = 1;
        }
        if (badInput[0] > 0) System.err.println("verify: " + badInput[0] + " input records without field \"" + idField + "\" were ignored");
        System.out.println("{\"mode\":" + jsonStr(mode) + ",\"input\":" + nIn + ",\"output\":" + nOut + ",\"distinct_ids\":" + distinct
                + ",\"missing\":" + missing[0] + ",\"duplicated\":" + duplicated[0] + ",\"extra\":" + extra[0]
                + ",\"order_violations\":" + orderViolations[0] + ",\"wrong_payload\":" + wrongPayload[0] + "}");
        // at_least_once checks loss only: repeats are allowed there, by definition.
        long dupCounted = a.flag("allow-duplicates") ? 0 : duplicated[0];
        return (missing[0] | dupCounted | extra[0] | orderViolations[0] | wrongPayload[0] | inputMismatch) == 0 ? 0 : 1;
    }

    static String preview(byte[] v) {
        if (v == null) return "<null>";
        String s = new String(v, 0, Math.min(v.length, 100), StandardCharsets.UTF_8);
        return s + (v.length > 100 ? "..." : "");
    }

    static void printExamples(String what, List<String> ex) {
        for (String e : ex) System.err.println("verify: " + what + ": " + e);
    }

    // ------------------------------------------------------------------ marker-check
    static int cmdMarkerCheck(Args a) throws Exception {
        String topic = a.req("topic");
        long timeoutS = a.getLong("timeout-s", 20);
        Properties p = baseProps();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "exactly-kafka-tool-marker");
        String runId = UUID.randomUUID().toString();
        Map<Integer, Long> markerOffset = new TreeMap<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            List<PartitionInfo> infos = producer.partitionsFor(topic);
            List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
            for (PartitionInfo pi : infos) {
                byte[] v = ("{\"marker\":\"" + runId + "\",\"partition\":" + pi.partition() + "}").getBytes(StandardCharsets.UTF_8);
                fs.add(producer.send(new ProducerRecord<>(topic, pi.partition(), ("marker-" + runId).getBytes(StandardCharsets.UTF_8), v)));
            }
            for (var f : fs) {
                RecordMetadata md = f.get(60, TimeUnit.SECONDS);
                markerOffset.put(md.partition(), md.offset());
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
        Set<Integer> seen = new TreeSet<>();
        long t0 = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> c = consumer(true)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int part : markerOffset.keySet()) tps.add(new TopicPartition(topic, part));
            c.assign(tps);
            for (TopicPartition tp : tps) c.seek(tp, markerOffset.get(tp.partition()));
            while (seen.size() < tps.size() && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    if (r.offset() == markerOffset.get(r.partition())) { seen.add(r.partition()); c.pause(List.of(new TopicPartition(topic, r.partition()))); }
                }
            }
            List<String> stalled = new ArrayList<>();
            if (seen.size() < tps.size()) {
                List<TopicPartition> st = new ArrayList<>();
                for (TopicPartition tp : tps) if (!seen.contains(tp.partition())) st.add(tp);
                Map<TopicPartition, Long> lso = c.endOffsets(st, Duration.ofSeconds(10));
                for (TopicPartition tp : st)
                    stalled.add("{\"partition\":" + tp.partition() + ",\"marker_offset\":" + markerOffset.get(tp.partition())
                            + ",\"last_stable_offset\":" + lso.get(tp) + "}");
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.println("{\"topic\":" + jsonStr(topic) + ",\"partitions\":" + tps.size() + ",\"seen\":" + seen.size()
                    + ",\"seconds\":" + String.format(Locale.ROOT, "%.2f", secs) + ",\"stalled\":[" + String.join(",", stalled) + "]}");
            if (!stalled.isEmpty())
                System.err.println("marker-check: read_committed reader did not see the marker on " + stalled.size()
                        + " partition(s) within " + timeoutS + " s: an open transaction pins the last stable offset");
            return stalled.isEmpty() ? 0 : 1;
        }
    }

    // ------------------------------------------------------------------ count / offsets
    static int cmdCount(Args a) {
        String topic = a.req("topic");
        long n = readTopic(topic, a.flag("read-committed"), a.getLong("stall-timeout-s", 60), (p, o, k, v) -> {});
        System.out.println(n);
        return 0;
    }

    /**
     * End-to-end latency of records as a read_committed reader sees them: the wall clock
     * at receipt minus the record's timestamp (CreateTime, set by the producer of the input
     * and carried through by the pipeline under test; same machine, same clock). Start it
     * before the input is produced. Records stamped within --warmup-s of the first one are
     * not measured (startup and the first rebalance). It ends once it has received the
     * count in --expect-file (written when the input is complete), or --idle-timeout-s
     * after the last record; then prints percentiles as JSON.
     */
    static int cmdLatency(Args a) throws Exception {
        String topic = a.req("topic");
        long warmupMs = (long) (a.getDouble("warmup-s", 10.0) * 1000);
        String expectFile = a.opts.get("expect-file");
        long idleMs = (long) (a.getDouble("idle-timeout-s", 60.0) * 1000);
        Properties p = baseProps();
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10000);
        // A reader that waits for bytes would add its own wait to what it measures.
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 10);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "exactly-kafka-tool-latency");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        // Counts per millisecond of latency, not a list of samples: a list that grows is
        // copied (8M samples: 64 MB) and collected while the run goes on, and this reader's
        // pause is then counted as the pipeline's latency (it showed as a spike at the
        // same second of every run). Latencies of 10 minutes or more share the last bucket.
        long[] hist = new long[600_001];
        long[] worstPerSecond = new long[16];  // by second of the record's timestamp since the first
        long n = 0;
        long received = 0, expect = -1, first = -1, maxMs = 0;
        long lastRecord = System.currentTimeMillis();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            // This reader's JVM compiles its fetch path on the first records it reads: give
            // it --warmup-records of another topic first, so that the compiling does not
            // take the CPU from what it measures in the run's first seconds.
            String warmTopic = a.opts.get("warmup-topic");
            long warmRecords = a.getLong("warmup-records", 0);
            if (warmTopic != null && warmRecords > 0) {
                List<TopicPartition> wtps = partitionsOf(c, warmTopic);
                c.assign(wtps);
                c.seekToBeginning(wtps);
                long seen = 0, lastWarm = System.currentTimeMillis();
                while (seen < warmRecords && System.currentTimeMillis() - lastWarm < 5000) {
                    ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(20));
                    for (ConsumerRecord<byte[], byte[]> r : recs) seen++;  // the iteration path compiles too
                    if (!recs.isEmpty()) lastWarm = System.currentTimeMillis();
                }
                System.err.println("kafka-tool latency: warmed up on " + seen + " records of " + warmTopic);
            }
            List<TopicPartition> tps = partitionsOf(c, topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            while (true) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(20));
                long now = System.currentTimeMillis();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    received++;
                    long ts = r.timestamp();
                    if (first < 0) first = ts;
                    if (ts < first + warmupMs) continue;
                    long l = Math.max(0, now - ts);
                    hist[(int) Math.min(l, hist.length - 1)]++;
                    n++;
                    maxMs = Math.max(maxMs, l);
                    int sec = (int) ((ts - first) / 1000);
                    if (sec >= worstPerSecond.length) worstPerSecond = Arrays.copyOf(worstPerSecond, Math.max(sec + 1, worstPerSecond.length * 2));
                    worstPerSecond[sec] = Math.max(worstPerSecond[sec], l);
                }
                if (!recs.isEmpty()) lastRecord = now;
                if (expect < 0 && expectFile != null) {
                    try {
                        String s = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(expectFile)),
                                StandardCharsets.UTF_8).trim();
                        if (!s.isEmpty()) expect = Long.parseLong(s);
                    } catch (java.nio.file.NoSuchFileException e) {
                        // not yet: the input is still being produced
                    }
                }
                if (expect >= 0 && received >= expect) break;
                if (now - lastRecord > idleMs) {
                    System.err.println("kafka-tool latency: nothing new for " + idleMs / 1000 + " s after "
                            + received + " records" + (expect >= 0 ? " of " + expect : ""));
                    break;
                }
            }
        }
        // Where in the run the tail came from: the worst latency of each second's records.
        StringBuilder tl = new StringBuilder("kafka-tool latency: worst ms per second of input (second 0 = "
                + first + " ms since the epoch):");
        for (int i = (int) (warmupMs / 1000); i < worstPerSecond.length; i++)
            if (worstPerSecond[i] > 0) tl.append(' ').append(i).append(':').append(worstPerSecond[i]);
        System.err.println(tl);
        final long m = n;
        // The value at rank floor(q * m) of the sorted latencies (0-based), as before.
        java.util.function.DoubleFunction<Long> pct = q -> {
            if (m == 0) return -1L;
            long rank = Math.min(m - 1, (long) Math.floor(q * m)), seen = 0;
            for (int ms = 0; ms < hist.length; ms++) {
                seen += hist[ms];
                if (seen > rank) return (long) ms;
            }
            return (long) (hist.length - 1);
        };
        System.out.println("{\"topic\":" + jsonStr(topic) + ",\"received\":" + received + ",\"expected\":" + expect
                + ",\"measured\":" + n + ",\"p50_ms\":" + pct.apply(0.50) + ",\"p90_ms\":" + pct.apply(0.90)
                + ",\"p99_ms\":" + pct.apply(0.99) + ",\"p999_ms\":" + pct.apply(0.999)
                + ",\"max_ms\":" + (n == 0 ? -1 : maxMs) + "}");
        return expect >= 0 && received >= expect ? 0 : 1;
    }

    static int cmdEndOffsets(Args a) {
        String topic = a.req("topic");
        StringBuilder b = new StringBuilder("{\"topic\":" + jsonStr(topic) + ",\"partitions\":[");
        try (KafkaConsumer<byte[], byte[]> ru = consumer(false); KafkaConsumer<byte[], byte[]> rc = consumer(true)) {
            List<TopicPartition> tps = partitionsOf(ru, topic);
            Map<TopicPartition, Long> begin = ru.beginningOffsets(tps, Duration.ofSeconds(60));
            Map<TopicPartition, Long> hw = ru.endOffsets(tps, Duration.ofSeconds(60));
            Map<TopicPartition, Long> lso = rc.endOffsets(tps, Duration.ofSeconds(60));
            long total = 0;
            for (int i = 0; i < tps.size(); i++) {
                TopicPartition tp = tps.get(i);
                if (i > 0) b.append(',');
                b.append("{\"partition\":").append(tp.partition()).append(",\"begin\":").append(begin.get(tp))
                        .append(",\"end\":").append(hw.get(tp)).append(",\"lso\":").append(lso.get(tp)).append('}');
                total += hw.get(tp);
            }
            b.append("],\"total_end\":").append(total).append('}');
        }
        System.out.println(b);
        return 0;
    }

    // One "name=value" line per configuration entry of the topic, as the broker reports it.
    static int cmdTopicConfig(Args a) throws Exception {
        String topic = a.req("topic");
        try (Admin admin = admin(15000)) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config c = admin.describeConfigs(List.of(r)).all().get(60, TimeUnit.SECONDS).get(r);
            List<String> lines = new ArrayList<>();
            for (ConfigEntry e : c.entries()) lines.add(e.name() + "=" + e.value());
            Collections.sort(lines);
            for (String l : lines) System.out.println(l);
        }
        return 0;
    }

    static int cmdAlterTopicConfig(Args a) throws Exception {
        String topic = a.req("topic");
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String kv : a.req("config").split(",")) {
            int eq = kv.indexOf('=');
            if (eq <= 0) throw new UsageException("--config wants k=v[,k=v], got: " + kv);
            ops.add(new AlterConfigOp(new ConfigEntry(kv.substring(0, eq), kv.substring(eq + 1)), AlterConfigOp.OpType.SET));
        }
        try (Admin admin = admin(15000)) {
            admin.incrementalAlterConfigs(Map.of(r, ops)).all().get(60, TimeUnit.SECONDS);
        }
        return 0;
    }

    static int cmdAddAcl(Args a) throws Exception {
        // --transactional-id-prefix P: every transactional id starting with P.
        String[][] kinds = {{"topic", "TOPIC", "LITERAL"}, {"group", "GROUP", "LITERAL"},
                            {"transactional-id-prefix", "TRANSACTIONAL_ID", "PREFIXED"}};
        String[] kind = null;
        for (String[] k : kinds) {
            if (!a.opts.containsKey(k[0])) continue;
            if (kind != null) throw new UsageException("add-acl wants one of --topic, --group, --transactional-id-prefix");
            kind = k;
        }
        if (kind == null) throw new UsageException("add-acl wants one of --topic, --group, --transactional-id-prefix");
        org.apache.kafka.common.resource.ResourcePattern resource = new org.apache.kafka.common.resource.ResourcePattern(
            org.apache.kafka.common.resource.ResourceType.valueOf(kind[1]), a.req(kind[0]),
            org.apache.kafka.common.resource.PatternType.valueOf(kind[2]));
        org.apache.kafka.common.acl.AclBinding b = new org.apache.kafka.common.acl.AclBinding(resource,
            new org.apache.kafka.common.acl.AccessControlEntry(a.req("principal"), "*",
                org.apache.kafka.common.acl.AclOperation.fromString(a.req("operation")),
                org.apache.kafka.common.acl.AclPermissionType.fromString(a.req("permission"))));
        try (Admin admin = admin(15000)) {
            admin.createAcls(List.of(b)).all().get(60, TimeUnit.SECONDS);
        }
        return 0;
    }

    static int cmdGroupOffsets(Args a) throws Exception {
        String group = a.req("group");
        String topic = a.req("topic");
        try (Admin admin = admin(15000); KafkaConsumer<byte[], byte[]> c = consumer(false)) {
            List<TopicPartition> tps = partitionsOf(c, topic);
            Map<TopicPartition, OffsetAndMetadata> offs = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
            StringBuilder b = new StringBuilder("{\"group\":" + jsonStr(group) + ",\"topic\":" + jsonStr(topic) + ",\"offsets\":{");
            long total = 0;
            for (int i = 0; i < tps.size(); i++) {
                OffsetAndMetadata om = offs.get(tps.get(i));
                long o = om == null ? -1 : om.offset();
                if (o > 0) total += o;
                if (i > 0) b.append(',');
                b.append('"').append(tps.get(i).partition()).append("\":").append(o);
            }
            b.append("},\"total\":").append(total).append('}');
            System.out.println(b);
            return 0;
        }
    }

    /** An operator's kafka-consumer-groups --reset-offsets --to-offset N --execute, on
     *  every partition of the topic (the group must have no active member). */
    static int cmdResetGroupOffsets(Args a) throws Exception {
        String group = a.req("group");
        String topic = a.req("topic");
        long to = a.getLong("to", 0);
        try (Admin admin = admin(15000); KafkaConsumer<byte[], byte[]> c = consumer(false)) {
            Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
            for (TopicPartition tp : partitionsOf(c, topic)) offs.put(tp, new OffsetAndMetadata(to));
            admin.alterConsumerGroupOffsets(group, offs).all().get(60, TimeUnit.SECONDS);
            System.out.println("{\"group\":" + jsonStr(group) + ",\"topic\":" + jsonStr(topic) + ",\"reset_to\":" + to + "}");
            return 0;
        }
    }

    static int cmdTransactions(Args a) throws Exception {
        try (Admin admin = admin(15000)) {
            Collection<TransactionListing> ls = admin.listTransactions().all().get(60, TimeUnit.SECONDS);
            List<String> ids = new ArrayList<>();
            for (TransactionListing l : ls) ids.add(l.transactionalId());
            Collections.sort(ids);
            Map<String, TransactionDescription> ds = ids.isEmpty() ? Map.of()
                    : admin.describeTransactions(ids).all().get(60, TimeUnit.SECONDS);
            int open = 0;
            StringBuilder b = new StringBuilder("{\"transactions\":[");
            for (int i = 0; i < ids.size(); i++) {
                TransactionDescription d = ds.get(ids.get(i));
                String st = d.state().toString();
                boolean isOpen = !(st.equals("Empty") || st.equals("CompleteCommit") || st.equals("CompleteAbort") || st.equals("Dead"));
                if (isOpen) open++;
                if (i > 0) b.append(',');
                b.append("{\"id\":").append(jsonStr(ids.get(i))).append(",\"state\":").append(jsonStr(st))
                        .append(",\"producer_id\":").append(d.producerId()).append(",\"epoch\":").append(d.producerEpoch())
                        .append(",\"partitions\":").append(d.topicPartitions().size()).append('}');
            }
            b.append("],\"open\":").append(open).append('}');
            System.out.println(b);
            return 0;
        }
    }

    static int cmdHoldOffsets(Args a) throws Exception {
        String group = a.req("group"), topic = a.req("topic"), client = a.req("client-id");
        Properties cp = baseProps();
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.CLIENT_ID_CONFIG, client);
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, a.getInt("session-timeout-ms", 6000));
        cp.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000);
        // The assignor librdkafka's default list shares with the Java client's.
        cp.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
        Properties pp = baseProps();
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, client);
        pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, a.getInt("txn-timeout-ms", 300000));
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp);
             KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (c.assignment().isEmpty()) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("no partitions assigned in 60 s");
                c.poll(Duration.ofMillis(200));
            }
            // The group's own committed offsets (0 where there is none): what is held is never
            // ahead of what was delivered, whatever the polls above fetched.
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(c.assignment(), Duration.ofSeconds(30));
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (TopicPartition tp : c.assignment()) {
                OffsetAndMetadata om = committed.get(tp);
                offsets.put(tp, new OffsetAndMetadata(om == null ? 0 : om.offset()));
            }
            p.initTransactions();
            p.beginTransaction();
            p.sendOffsetsToTransaction(offsets, c.groupMetadata());
            List<String> names = new ArrayList<>();
            for (TopicPartition tp : offsets.keySet()) names.add(tp.toString());
            Collections.sort(names);
            System.out.println("holding " + String.join(",", names) + " in an open transaction of " + client);
            System.out.flush();
            // Polls without fetching: stays a member (a rebalance would move the partitions
            // while the offsets are held, which is not the case this stands in for).
            c.pause(c.assignment());
            while (true) c.poll(Duration.ofMillis(200));
        }
    }
}
