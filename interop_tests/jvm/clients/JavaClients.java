/*
 * The Java client (kafka-clients 3.9 or 4.x, whichever jars are on the class path) driven from
 * the interop tests: one JVM serves a whole test module, with producers, readers and group
 * members on threads of their own.
 *
 * Run with Java's source launcher: java -cp <jars> JavaClients.java
 *
 * Commands, one a line on stdin, words separated by one space; settings are Kafka's client
 * config keys, key=value, as the last words:
 *
 *   produce <id> <topic> <records file> <settings>...
 *       sends every record of the file (a line each: partition, timestamp or "-", key, value,
 *       then one word per header "name:value"; tab separated, bytes in base64, "-" for null)
 *       with one KafkaProducer, flushes and closes it; prints
 *       {"id", "type": "produced", "acks": [[partition, offset], ...], "errors": [...]}
 *   create <id> <topic> <partitions> <settings>...
 *       creates the topic (replication factor 1) with the Admin client; prints
 *       {"id", "type": "created", "error": null, or "TopicExistsException"}
 *   describe <id> <topic> <settings>...
 *       describes the topic with the Admin client; prints {"id", "type": "described",
 *       "partitions": [[partition, leader], ...], or null when the topic does not exist}
 *   topics <id> <settings>...
 *       lists the topics with the Admin client; prints {"id", "type": "topics", "topics": [...]}
 *   read <id> <topic> <partition>=<count>,... <output file> <settings>...
 *       assigns those partitions (no group) and reads each from its beginning until it has
 *       returned <count> records of it, or, for the count "end", up to the end offset it had
 *       when the read began; writes one JSON object a record to the file (partition, offset,
 *       key, value, headers, timestamp; bytes in base64), prints {"id", "type": "read"}
 *   consumer <member> <topic> <batch|none> <settings>...
 *       a group member subscribed to the topic, polling on a thread of its own; with "batch"
 *       it commits (commitSync) what it returned after each poll that returned records, and in
 *       onPartitionsRevoked what it returned of the revoked partitions and had not committed.
 *   commit <member> <partition>=<offset>,...
 *       that member commits exactly those offsets (commitSync), from its polling thread
 *   close <member>
 *       that member closes its consumer
 *
 * End of stdin closes every member and exits. Every line printed on stdout is one JSON object,
 * printed whole under one lock and numbered ("seq") in the order printed, so the events of all
 * threads have one order. A member's events carry its name ("member") and are the group
 * driver's (interop_tests/group_driver.py): started; revoked, assigned, lost (partitions, and
 * the partitions owned afterwards); records ([partition, offset, key] each); committed,
 * commit_error; closed; error.
 */

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaClients {
    static final Duration POLL = Duration.ofMillis(200);
    static final Duration READ_TIMEOUT = Duration.ofSeconds(60);
    static final Base64.Encoder B64 = Base64.getEncoder();
    static final Base64.Decoder UNB64 = Base64.getDecoder();
    static final Map<String, Member> MEMBERS = new ConcurrentHashMap<>();
    static final Object PRINT_LOCK = new Object();
    static final AtomicLong SEQ = new AtomicLong();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<Thread> threads = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String[] words = line.strip().split(" ");
            try {
                Thread started = command(words);
                if (started != null) {
                    threads.add(started);
                }
            } catch (Exception e) {
                emit(new Json().put("type", "error").put("command", line).put("error", describe(e)));
            }
        }
        for (Member member : MEMBERS.values()) {
            member.commands.add(new String[] {"close"});
        }
        for (Thread thread : threads) {
            thread.join(30_000);
        }
        System.out.flush();
        System.exit(0);
    }

    static Thread command(String[] words) {
        switch (words[0]) {
            case "produce": {
                String id = words[1], topic = words[2];
                Path file = Path.of(words[3]);
                Properties settings = settings(words, 4);
                return start("produce-" + id, () -> produce(id, topic, file, settings), id);
            }
            case "create": {
                String id = words[1], topic = words[2];
                int partitions = Integer.parseInt(words[3]);
                Properties settings = settings(words, 4);
                return start("create-" + id, () -> create(id, topic, partitions, settings), id);
            }
            case "describe": {
                String id = words[1], topic = words[2];
                Properties settings = settings(words, 3);
                return start("describe-" + id, () -> describe(id, topic, settings), id);
            }
            case "topics": {
                String id = words[1];
                Properties settings = settings(words, 2);
                return start("topics-" + id, () -> topics(id, settings), id);
            }
            case "read": {
                String id = words[1], topic = words[2], counts = words[3];
                Path file = Path.of(words[4]);
                Properties settings = settings(words, 5);
                return start("read-" + id, () -> read(id, topic, counts, file, settings), id);
            }
            case "consumer": {
                Member member = new Member(words[1], words[2], words[3].equals("batch"), settings(words, 4));
                if (MEMBERS.putIfAbsent(member.name, member) != null) {
                    throw new IllegalArgumentException("a member named " + member.name + " exists");
                }
                return start("member-" + member.name, member::run, null);
            }
            case "commit":
            case "close": {
                Member member = MEMBERS.get(words[1]);
                if (member == null) {
                    throw new IllegalArgumentException("no member named " + words[1]);
                }
                member.commands.add(words);
                return null;
            }
            default:
                throw new IllegalArgumentException("unknown command " + words[0]);
        }
    }

    interface Task {
        void run() throws Exception;
    }

    static Thread start(String name, Task task, String id) {
        Thread thread = new Thread(() -> {
            try {
                task.run();
            } catch (Throwable e) {
                emit(new Json().put("id", id).put("type", "error").put("error", describe(e)));
            }
        }, name);
        thread.start();
        return thread;
    }

    static Properties settings(String[] words, int from) {
        Properties settings = new Properties();
        for (int i = from; i < words.length; i++) {
            int eq = words[i].indexOf('=');
            if (eq < 1) {
                throw new IllegalArgumentException("not key=value: " + words[i]);
            }
            settings.put(words[i].substring(0, eq), words[i].substring(eq + 1));
        }
        return settings;
    }

    // -- producing and reading back

    static byte[] bytes(String word) {
        return word.equals("-") ? null : UNB64.decode(word);
    }

    static void produce(String id, String topic, Path file, Properties settings) throws Exception {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        RecordMetadata[] acks = new RecordMetadata[lines.size()];
        List<String> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(settings, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < lines.size(); i++) {
                String[] fields = lines.get(i).split("\t", -1);
                List<Header> headers = new ArrayList<>();
                for (int h = 4; h < fields.length; h++) {
                    String[] header = fields[h].split(":", -1);
                    String name = new String(UNB64.decode(header[0]), StandardCharsets.UTF_8);
                    headers.add(new RecordHeader(name, bytes(header[1])));
                }
                Long timestamp = fields[1].equals("-") ? null : Long.parseLong(fields[1]);
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(
                        topic, Integer.parseInt(fields[0]), timestamp, bytes(fields[2]), bytes(fields[3]), headers);
                int index = i;
                producer.send(record, (metadata, error) -> {
                    if (error != null) {
                        errors.add("record " + index + ": " + describe(error));
                    } else {
                        acks[index] = metadata;
                    }
                });
            }
            producer.flush();
        }
        StringBuilder list = new StringBuilder("[");
        for (int i = 0; i < acks.length; i++) {
            list.append(i == 0 ? "" : ",");
            list.append(acks[i] == null ? "null" : "[" + acks[i].partition() + "," + acks[i].offset() + "]");
        }
        emit(new Json().put("id", id).put("type", "produced").raw("acks", list.append("]").toString())
                .raw("errors", Json.strings(errors)));
    }

    static void create(String id, String topic, int partitions, Properties settings) throws Exception {
        String error = null;
        try (Admin admin = Admin.create(settings)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
            error = e.getCause().getClass().getSimpleName();
        }
        emit(new Json().put("id", id).put("type", "created").put("error", error));
    }

    static void describe(String id, String topic, Properties settings) throws Exception {
        String described;
        try (Admin admin = Admin.create(settings)) {
            TopicDescription description = admin.describeTopics(List.of(topic)).topicNameValues().get(topic).get();
            StringBuilder list = new StringBuilder("[");
            for (TopicPartitionInfo info : description.partitions()) {
                list.append(list.length() > 1 ? "," : "");
                list.append("[").append(info.partition()).append(",").append(info.leader().id()).append("]");
            }
            described = list.append("]").toString();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                throw e;
            }
            described = "null";
        }
        emit(new Json().put("id", id).put("type", "described").raw("partitions", described));
    }

    static void topics(String id, Properties settings) throws Exception {
        try (Admin admin = Admin.create(settings)) {
            Set<String> names = admin.listTopics().names().get();
            emit(new Json().put("id", id).put("type", "topics").raw("topics", Json.strings(new ArrayList<>(names))));
        }
    }

    static void read(String id, String topic, String counts, Path file, Properties settings) throws Exception {
        Map<TopicPartition, Long> wanted = new HashMap<>();  // how many records; -1: to the end
        for (String pair : counts.split(",")) {
            String[] pc = pair.split("=");
            wanted.put(new TopicPartition(topic, Integer.parseInt(pc[0])), pc[1].equals("end") ? -1 : Long.parseLong(pc[1]));
        }
        List<TopicPartition> assigned = new ArrayList<>(wanted.keySet());
        Map<TopicPartition, Long> returned = new HashMap<>();
        long deadline = System.nanoTime() + READ_TIMEOUT.toNanos();
        try (KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(settings, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             BufferedWriter out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            consumer.assign(assigned);
            consumer.seekToBeginning(assigned);
            Map<TopicPartition, Long> ends = consumer.endOffsets(assigned, READ_TIMEOUT);
            while (assigned.stream().anyMatch(tp -> wanted.get(tp) < 0
                    ? consumer.position(tp) < ends.get(tp)
                    : returned.getOrDefault(tp, 0L) < wanted.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("timed out reading " + topic + ": " + returned + " of " + wanted);
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(POLL)) {
                    returned.merge(new TopicPartition(r.topic(), r.partition()), 1L, Long::sum);
                    StringBuilder headers = new StringBuilder("[");
                    for (Header h : r.headers()) {
                        headers.append(headers.length() > 1 ? "," : "");
                        headers.append("[").append(Json.quote(h.key())).append(",").append(Json.b64(h.value())).append("]");
                    }
                    out.write(new Json().put("partition", r.partition()).put("offset", r.offset())
                            .raw("key", Json.b64(r.key())).raw("value", Json.b64(r.value()))
                            .raw("headers", headers.append("]").toString()).put("timestamp", r.timestamp())
                            .toString());
                    out.write("\n");
                }
            }
        }
        emit(new Json().put("id", id).put("type", "read"));
    }

    // -- group members

    static class Member implements Runnable {
        final String name, topic;
        final boolean batchCommits, incremental;
        final Properties settings;
        final BlockingQueue<String[]> commands = new LinkedBlockingQueue<>();
        // What this member returned and has not committed yet: the position after it.
        final Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
        final Set<Integer> owned = new TreeSet<>();
        KafkaConsumer<byte[], byte[]> consumer;

        Member(String name, String topic, boolean batchCommits, Properties settings) {
            this.name = name;
            this.topic = topic;
            this.batchCommits = batchCommits;
            this.settings = settings;
            String strategy = settings.getProperty("partition.assignment.strategy", "");
            this.incremental = strategy.contains("CooperativeSticky");
        }

        Json event(String type) {
            return new Json().put("member", name).put("type", type);
        }

        public void run() {
            try {
                consumer = new KafkaConsumer<>(settings, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                consumer.subscribe(List.of(topic), new Listener());
                emit(event("started"));
                try {
                    while (true) {
                        String[] command = commands.poll();
                        if (command != null && command[0].equals("close")) {
                            break;
                        }
                        if (command != null && command[0].equals("commit")) {
                            commit(explicit(command[2]));
                        }
                        ConsumerRecords<byte[], byte[]> records = consumer.poll(POLL);
                        if (!records.isEmpty()) {
                            returned(records);
                        }
                        if (batchCommits && !processed.isEmpty()) {
                            commitProcessed(processed.keySet());
                        }
                    }
                } finally {
                    consumer.close();  // a dynamic member's revoke callback commits, then it leaves
                }
                emit(event("closed"));
            } catch (Throwable e) {
                emit(event("error").put("error", describe(e)));
            } finally {
                MEMBERS.remove(name);
            }
        }

        void returned(ConsumerRecords<byte[], byte[]> records) {
            StringBuilder list = new StringBuilder("[");
            for (ConsumerRecord<byte[], byte[]> r : records) {
                list.append(list.length() > 1 ? "," : "");
                String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
                list.append("[").append(r.partition()).append(",").append(r.offset()).append(",")
                        .append(Json.quote(key)).append("]");
                processed.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
            emit(event("records").raw("records", list.append("]").toString()));
        }

        Map<TopicPartition, OffsetAndMetadata> explicit(String offsets) {
            Map<TopicPartition, OffsetAndMetadata> wanted = new HashMap<>();
            for (String pair : offsets.split(",")) {
                String[] po = pair.split("=");
                wanted.put(new TopicPartition(topic, Integer.parseInt(po[0])),
                        new OffsetAndMetadata(Long.parseLong(po[1]), "by " + name));
            }
            return wanted;
        }

        /** Commits what was returned of these partitions and not committed yet. */
        void commitProcessed(Collection<TopicPartition> partitions) {
            Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();
            for (TopicPartition tp : partitions) {
                if (processed.containsKey(tp)) {
                    pending.put(tp, processed.get(tp));
                }
            }
            if (!pending.isEmpty() && commit(pending)) {
                pending.forEach(processed::remove);
            }
        }

        boolean commit(Map<TopicPartition, OffsetAndMetadata> offsets) {
            Json committed = new Json();
            Map<TopicPartition, OffsetAndMetadata> sorted = new TreeMap<>(Comparator.comparingInt(TopicPartition::partition));
            sorted.putAll(offsets);
            sorted.forEach((tp, om) -> committed.put(String.valueOf(tp.partition()), om.offset()));
            try {
                consumer.commitSync(offsets);
                emit(event("committed").raw("offsets", committed.toString()));
                return true;
            } catch (Exception e) {
                emit(event("commit_error").raw("offsets", committed.toString()).put("error", describe(e)));
                return false;
            }
        }

        void change(String type, Collection<TopicPartition> partitions) {
            Set<Integer> numbers = new TreeSet<>();
            partitions.forEach(tp -> numbers.add(tp.partition()));
            if (type.equals("assigned") && !incremental) {
                owned.clear();
            }
            if (type.equals("assigned")) {
                owned.addAll(numbers);
            } else {
                owned.removeAll(numbers);
            }
            emit(event(type).raw("partitions", numbers.toString()).raw("owned", owned.toString()));
        }

        class Listener implements ConsumerRebalanceListener {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                if (batchCommits) {
                    commitProcessed(partitions);
                }
                partitions.forEach(processed::remove);
                change("revoked", partitions);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                change("assigned", partitions);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                partitions.forEach(processed::remove);
                change("lost", partitions);
            }
        }
    }

    // -- output

    static String describe(Throwable e) {
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        String text = trace.toString();
        return text.length() > 4000 ? text.substring(0, 4000) + "..." : text;
    }

    static void emit(Json event) {
        synchronized (PRINT_LOCK) {
            event.put("seq", SEQ.incrementAndGet()).put("t", System.currentTimeMillis() / 1000.0);
            System.out.println(event);
            System.out.flush();
        }
    }

    /** One JSON object, built field by field. */
    static class Json {
        final StringBuilder text = new StringBuilder();

        Json raw(String name, String json) {
            text.append(text.length() == 0 ? "" : ",").append(quote(name)).append(":").append(json);
            return this;
        }

        Json put(String name, String value) {
            return raw(name, quote(value));
        }

        Json put(String name, long value) {
            return raw(name, Long.toString(value));
        }

        Json put(String name, double value) {
            return raw(name, Double.toString(value));
        }

        @Override
        public String toString() {
            return "{" + text + "}";
        }

        static String b64(byte[] data) {
            return data == null ? "null" : quote(B64.encodeToString(data));
        }

        static String strings(Collection<String> values) {
            StringBuilder list = new StringBuilder("[");
            synchronized (values) {
                for (String value : values) {
                    list.append(list.length() > 1 ? "," : "").append(quote(value));
                }
            }
            return list.append("]").toString();
        }

        static String quote(String value) {
            if (value == null) {
                return "null";
            }
            StringBuilder out = new StringBuilder("\"");
            for (char c : value.toCharArray()) {
                if (c == '"' || c == '\\') {
                    out.append('\\').append(c);
                } else if (c < 0x20) {
                    out.append(String.format("\\u%04x", (int) c));
                } else {
                    out.append(c);
                }
            }
            return out.append('"').toString();
        }
    }
}
