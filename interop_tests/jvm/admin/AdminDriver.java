// The Java Admin client, driven line by line from a test (interop_tests/test_java_admin.py).
//
// Each line on stdin is a command: tab-separated fields, the first the bootstrap
// servers (one Admin client is kept per bootstrap), the second the call, the rest
// its arguments. Each answer is one line on stdout: "OK <json>" or
// "ERR <exception class> <message>". Compiled by the JDK's source launcher
// against kafka-clients 3.9 or 4.x: calls that differ between them go through
// reflection.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

public class AdminDriver {
    private static final Map<String, Admin> admins = new HashMap<>();
    private static final long TIMEOUT_S = 60;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        out.println("READY");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t", -1);
            try {
                out.println("OK " + json(run(admin(f[0]), f[1], Arrays.copyOfRange(f, 2, f.length))));
            } catch (Throwable t) {
                Throwable cause = t;
                while ((cause instanceof ExecutionException || cause instanceof java.lang.reflect.InvocationTargetException)
                        && cause.getCause() != null) {
                    cause = cause.getCause();
                }
                String message = String.valueOf(cause.getMessage()).replace('\n', ' ');
                out.println("ERR " + cause.getClass().getSimpleName() + " " + message);
            }
        }
        for (Admin admin : admins.values()) admin.close();
    }

    private static Admin admin(String bootstrap) {
        return admins.computeIfAbsent(bootstrap, b -> {
            Properties props = new Properties();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, b);
            props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
            props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
            return Admin.create(props);
        });
    }

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> future) throws Exception {
        return future.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    private static Object run(Admin admin, String call, String[] a) throws Exception {
        switch (call) {
            case "createTopics": {
                NewTopic topic = new NewTopic(a[0], Integer.parseInt(a[1]), (short) 1);
                topic.configs(pairs(a.length > 2 ? a[2] : ""));
                CreateTopicsResult result = admin.createTopics(List.of(topic));
                get(result.all());
                return Map.of("partitions", get(result.numPartitions(a[0])));
            }
            case "listTopics":
                return new TreeSet<>(get(admin.listTopics().names()));
            case "describeTopic": {
                TopicDescription d = get(admin.describeTopics(List.of(a[0])).allTopicNames()).get(a[0]);
                List<Object> partitions = new ArrayList<>();
                for (TopicPartitionInfo p : d.partitions()) {
                    partitions.add(List.of(p.partition(), p.leader().id(), ids(p.replicas()), ids(p.isr())));
                }
                return Map.of("name", d.name(), "internal", d.isInternal(), "partitions", partitions);
            }
            case "deleteTopics":
                get(admin.deleteTopics(List.of(a[0])).all());
                return "deleted";
            case "createPartitions":
                get(admin.createPartitions(Map.of(a[0], NewPartitions.increaseTo(Integer.parseInt(a[1])))).all());
                return "created";
            case "listOffsets": {
                Map<TopicPartition, OffsetSpec> specs = new LinkedHashMap<>();
                TopicPartition tp = new TopicPartition(a[0], Integer.parseInt(a[1]));
                specs.put(tp, spec(a[2]));
                ListOffsetsResult.ListOffsetsResultInfo info = get(admin.listOffsets(specs).partitionResult(tp));
                return List.of(info.offset(), info.timestamp());
            }
            case "describeConfigs": {
                ConfigResource resource = new ConfigResource(ConfigResource.Type.valueOf(a[0]), a[1]);
                Config config = get(admin.describeConfigs(List.of(resource)).all()).get(resource);
                Map<String, Object> entries = new TreeMap<>();
                for (ConfigEntry e : config.entries()) {
                    entries.put(e.name(), Arrays.asList(e.value(), e.source().name(), e.isReadOnly()));
                }
                return entries;
            }
            case "incrementalAlterConfigs": {
                ConfigResource resource = new ConfigResource(ConfigResource.Type.valueOf(a[0]), a[1]);
                List<AlterConfigOp> ops = new ArrayList<>();
                for (int i = 2; i < a.length; i += 3) {
                    ops.add(new AlterConfigOp(new ConfigEntry(a[i + 1], a[i + 2].equals("<null>") ? null : a[i + 2]),
                            AlterConfigOp.OpType.valueOf(a[i])));
                }
                get(admin.incrementalAlterConfigs(Map.of(resource, ops)).all());
                return "altered";
            }
            case "alterConfigs": {
                // deprecated in 3.x, gone from the 4.x Admin interface: called by reflection
                ConfigResource resource = new ConfigResource(ConfigResource.Type.valueOf(a[0]), a[1]);
                List<ConfigEntry> entries = new ArrayList<>();
                for (Map.Entry<String, String> e : pairs(a.length > 2 ? a[2] : "").entrySet()) {
                    entries.add(new ConfigEntry(e.getKey(), e.getValue()));
                }
                Method method = Admin.class.getMethod("alterConfigs", Map.class);
                Object result = method.invoke(admin, Map.of(resource, new Config(entries)));
                get((org.apache.kafka.common.KafkaFuture<?>) result.getClass().getMethod("all").invoke(result));
                return "altered";
            }
            case "deleteRecords": {
                TopicPartition tp = new TopicPartition(a[0], Integer.parseInt(a[1]));
                DeleteRecordsResult result = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(Long.parseLong(a[2]))));
                return get(result.lowWatermarks().get(tp)).lowWatermark();
            }
            case "describeCluster": {
                DescribeClusterResult result = admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true));
                List<Object> nodes = new ArrayList<>();
                for (Node n : get(result.nodes())) nodes.add(List.of(n.id(), n.host(), n.port()));
                Set<String> operations = new TreeSet<>();
                Set<?> authorized = get(result.authorizedOperations());
                if (authorized != null) for (Object op : authorized) operations.add(op.toString());
                return Map.of("clusterId", get(result.clusterId()), "controller", get(result.controller()).id(),
                        "nodes", nodes, "authorizedOperations", operations);
            }
            case "listConsumerGroups": {
                Map<String, Object> groups = new TreeMap<>();
                for (ConsumerGroupListing g : get(admin.listConsumerGroups().all())) {
                    groups.put(g.groupId(), String.valueOf(stateOf(g)));
                }
                return groups;
            }
            case "describeConsumerGroup": {
                ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(a[0])).all()).get(a[0]);
                List<Object> members = new ArrayList<>();
                for (MemberDescription m : d.members()) {
                    Set<String> assigned = new TreeSet<>();
                    for (TopicPartition tp : m.assignment().topicPartitions()) assigned.add(tp.toString());
                    members.add(Map.of("clientId", m.clientId(), "host", m.host(), "assignment", assigned));
                }
                return Map.of("groupId", d.groupId(), "state", String.valueOf(stateOf(d)),
                        "assignor", d.partitionAssignor(), "coordinator", d.coordinator().id(),
                        "simple", d.isSimpleConsumerGroup(), "members", members);
            }
            case "listConsumerGroupOffsets": {
                Map<String, Object> offsets = new TreeMap<>();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
                        get(admin.listConsumerGroupOffsets(a[0]).partitionsToOffsetAndMetadata()).entrySet()) {
                    offsets.put(e.getKey().toString(), e.getValue() == null ? null
                            : Arrays.asList(e.getValue().offset(), e.getValue().metadata()));
                }
                return offsets;
            }
            case "alterConsumerGroupOffsets": {
                Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
                for (int i = 1; i < a.length; i += 3) {
                    offsets.put(new TopicPartition(a[i], Integer.parseInt(a[i + 1])),
                            new OffsetAndMetadata(Long.parseLong(a[i + 2]), "set by admin"));
                }
                get(admin.alterConsumerGroupOffsets(a[0], offsets).all());
                return "altered";
            }
            case "deleteConsumerGroupOffsets": {
                Set<TopicPartition> partitions = new LinkedHashSet<>();
                for (int i = 1; i < a.length; i += 2) {
                    partitions.add(new TopicPartition(a[i], Integer.parseInt(a[i + 1])));
                }
                DeleteConsumerGroupOffsetsResult result = admin.deleteConsumerGroupOffsets(a[0], partitions);
                Map<String, Object> outcomes = new TreeMap<>();
                for (TopicPartition tp : partitions) {
                    try {
                        get(result.partitionResult(tp));
                        outcomes.put(tp.toString(), "deleted");
                    } catch (ExecutionException e) {
                        outcomes.put(tp.toString(), e.getCause().getClass().getSimpleName());
                    }
                }
                return outcomes;
            }
            case "deleteConsumerGroups":
                get(admin.deleteConsumerGroups(List.of(a[0])).all());
                return "deleted";
            case "describeLogDirs": {
                List<Object> dirs = new ArrayList<>();
                int broker = Integer.parseInt(a[0]);
                Map<String, LogDirDescription> found = get(admin.describeLogDirs(List.of(broker)).allDescriptions()).get(broker);
                for (Map.Entry<String, LogDirDescription> e : new TreeMap<>(found).entrySet()) {
                    Map<String, Object> replicas = new TreeMap<>();
                    for (Map.Entry<TopicPartition, ReplicaInfo> r : e.getValue().replicaInfos().entrySet()) {
                        replicas.put(r.getKey().toString(), List.of(r.getValue().size(), r.getValue().offsetLag(), r.getValue().isFuture()));
                    }
                    OptionalLong total = e.getValue().totalBytes();
                    OptionalLong usable = e.getValue().usableBytes();
                    dirs.add(Arrays.asList(e.getKey(), e.getValue().error() == null ? null : e.getValue().error().getClass().getSimpleName(),
                            replicas, total.isPresent() ? total.getAsLong() : null, usable.isPresent() ? usable.getAsLong() : null));
                }
                return dirs;
            }
            default:
                throw new IllegalArgumentException("unknown call " + call);
        }
    }

    // a group's state: groupState() in 4.x, state() (ConsumerGroupState) in 3.9
    private static Object stateOf(Object group) throws Exception {
        for (String name : new String[] {"groupState", "state"}) {
            try {
                Object state = group.getClass().getMethod(name).invoke(group);
                return state instanceof Optional ? ((Optional<?>) state).map(Object::toString).orElse(null) : state;
            } catch (NoSuchMethodException e) {
                // try the next name
            }
        }
        throw new IllegalStateException("no state on " + group.getClass());
    }

    private static OffsetSpec spec(String text) {
        switch (text) {
            case "earliest": return OffsetSpec.earliest();
            case "latest": return OffsetSpec.latest();
            case "maxTimestamp": return OffsetSpec.maxTimestamp();
            default: return OffsetSpec.forTimestamp(Long.parseLong(text));
        }
    }

    private static List<Integer> ids(List<Node> nodes) {
        List<Integer> ids = new ArrayList<>();
        for (Node n : nodes) ids.add(n.id());
        return ids;
    }

    private static Map<String, String> pairs(String text) {
        Map<String, String> map = new LinkedHashMap<>();
        for (String pair : text.split(",")) {
            if (pair.isEmpty()) continue;
            int eq = pair.indexOf('=');
            map.put(pair.substring(0, eq), pair.substring(eq + 1));
        }
        return map;
    }

    private static String json(Object value) {
        if (value == null) return "null";
        if (value instanceof String) return quote((String) value);
        if (value instanceof Number || value instanceof Boolean) return value.toString();
        if (value instanceof Map) {
            StringJoiner out = new StringJoiner(",", "{", "}");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) out.add(quote(String.valueOf(e.getKey())) + ":" + json(e.getValue()));
            return out.toString();
        }
        if (value instanceof Collection) {
            StringJoiner out = new StringJoiner(",", "[", "]");
            for (Object item : (Collection<?>) value) out.add(json(item));
            return out.toString();
        }
        return quote(value.toString());
    }

    private static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        return out.append('"').toString();
    }
}
