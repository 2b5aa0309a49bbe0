package exactly.bench;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The usual Kafka Streams deduplication: a persistent (RocksDB) KeyValueStore keyed by
 * the message id, with its changelog topic (Streams' default, which is what makes the
 * store survive a task moving or a crash under exactly_once_v2). A record whose id is in
 * the store is dropped; otherwise the id is stored and the record forwarded unchanged,
 * with its key, so the default partitioner puts it on the same partition number as the
 * input (the input is keyed by the id).
 *
 * Retention is unbounded (the store keeps every id), the same as the exactly pipeline
 * it is compared with (dedupe retention 0 = unbounded).
 *
 * <pre>
 * java -cp ... exactly.bench.StreamsDedupe --bootstrap B --input IN --output OUT
 *     --application-id APP --state-dir DIR [--commit-interval-ms 1000] [--threads 1]
 *     [--caching false] [--prop key=value]...
 * </pre>
 * Runs until SIGTERM, then closes cleanly (commits) and prints its counters.
 */
public final class StreamsDedupe {
    static final String STORE = "dedupe-ids";
    static final byte[] NEEDLE = "\"messageId\"".getBytes(StandardCharsets.UTF_8);

    static final AtomicLong forwarded = new AtomicLong();
    static final AtomicLong duplicates = new AtomicLong();
    static final AtomicLong noId = new AtomicLong();

    public static void main(String[] argv) throws Exception {
        Properties p = new Properties();
        String input = null, output = null;
        boolean caching = false;
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // The same kind of tuning the exactly pipeline and the raw copy get: big producer
        // batches, a short linger, large polls.
        p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 5);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG), 1 << 20);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), 10000);
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (i + 1 >= argv.length) usage("missing value for " + a);
            String v = argv[++i];
            switch (a) {
                case "--bootstrap" -> p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, v);
                case "--input" -> input = v;
                case "--output" -> output = v;
                case "--application-id" -> p.put(StreamsConfig.APPLICATION_ID_CONFIG, v);
                case "--state-dir" -> p.put(StreamsConfig.STATE_DIR_CONFIG, v);
                case "--commit-interval-ms" -> p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Integer.parseInt(v));
                case "--threads" -> p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(v));
                case "--caching" -> caching = Boolean.parseBoolean(v);
                case "--prop" -> {
                    int eq = v.indexOf('=');
                    if (eq <= 0) usage("--prop needs key=value");
                    p.put(v.substring(0, eq), v.substring(eq + 1));
                }
                default -> usage("unknown option " + a);
            }
        }
        if (input == null || output == null || !p.containsKey(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG)
                || !p.containsKey(StreamsConfig.APPLICATION_ID_CONFIG) || !p.containsKey(StreamsConfig.STATE_DIR_CONFIG))
            usage("--bootstrap, --input, --output, --application-id and --state-dir are required");

        StoreBuilder<KeyValueStore<Bytes, Long>> store = Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(STORE), Serdes.Bytes(), Serdes.Long());
        if (caching) store = store.withCachingEnabled();

        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(store);
        b.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .process(DedupeProcessor::new, STORE)
                .to(output, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        AtomicInteger exitCode = new AtomicInteger(0);
        CountDownLatch done = new CountDownLatch(1);
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("streams-dedupe: uncaught: " + e);
            exitCode.set(1);
            done.countDown();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(60));
            System.out.println("{\"forwarded\":" + forwarded.get() + ",\"duplicates\":" + duplicates.get()
                    + ",\"no_id\":" + noId.get() + "}");
            System.out.flush();
        }));
        streams.start();
        done.await();
        System.exit(exitCode.get());
    }

    static void usage(String why) {
        System.err.println("streams-dedupe: " + why);
        System.err.println("usage: StreamsDedupe --bootstrap B --input IN --output OUT --application-id APP "
                + "--state-dir DIR [--commit-interval-ms 1000] [--threads 1] [--caching false] [--prop k=v]...");
        System.exit(2);
    }

    /** The id's bytes: the JSON string value of "messageId" found by a plain byte search. */
    static Bytes messageId(byte[] v) {
        if (v == null) return null;
        outer:
        for (int i = 0; i + NEEDLE.length <= v.length; i++) {
            for (int k = 0; k < NEEDLE.length; k++)
                if (v[i + k] != NEEDLE[k]) continue outer;
            int j = i + NEEDLE.length;
            while (j < v.length && (v[j] == ' ' || v[j] == ':')) j++;
            if (j >= v.length || v[j] != '"') return null;
            int start = ++j;
            while (j < v.length && v[j] != '"') j++;
            if (j >= v.length || j == start) return null;
            byte[] id = new byte[j - start];
            System.arraycopy(v, start, id, 0, id.length);
            return Bytes.wrap(id);
        }
        return null;
    }

    static final class DedupeProcessor implements Processor<byte[], byte[], byte[], byte[]> {
        private ProcessorContext<byte[], byte[]> ctx;
        private KeyValueStore<Bytes, Long> seen;

        @Override
        public void init(ProcessorContext<byte[], byte[]> context) {
            ctx = context;
            seen = context.getStateStore(STORE);
        }

        @Override
        public void process(Record<byte[], byte[]> r) {
            Bytes id = messageId(r.value());
            if (id == null) {
                // Not silently passed: counted and dropped (the input never has these).
                noId.incrementAndGet();
                return;
            }
            if (seen.get(id) != null) {
                duplicates.incrementAndGet();
                return;
            }
            seen.put(id, r.timestamp());
            ctx.forward(r);
            forwarded.incrementAndGet();
        }
    }
}
