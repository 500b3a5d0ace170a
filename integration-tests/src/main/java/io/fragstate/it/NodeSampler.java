package io.fragstate.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One sample of every fragstate node of a run: per process (JobManager, TaskManagers, standalone
 * nodes) its resident memory, open file descriptors (all, and those on fragment files of a
 * fragstate store) from {@code /proc/<pid>}, and from {@code fragstate stats --json} its
 * tombstones, tombstone file size, stored bytes and the manifests deletes removed. A node is found
 * in the stats by its failure domain: {@code <host>/<pid>} for a Flink process ({@code
 * fragstate.failure-domain: process}), {@code standalone-I} for standalone node I.
 */
final class NodeSampler {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One node at one moment; -1 where the figure could not be read. */
    record NodeSample(double minute, String node, long pid, long rssBytes, long fds, long fragmentFds,
            long fdSoftLimit, long tombstones, long tombstoneFileBytes, long storeBytes, long fragments,
            long manifestsDeleted, long heapBytes) {

        static final String CSV_HEADER = "minute,node,pid,rss_bytes,fds,fragment_fds,fd_soft_limit,tombstones,"
                + "tombstone_file_bytes,store_bytes,fragments,manifests_deleted,heap_bytes";

        String csv() {
            return String.format(java.util.Locale.ROOT, "%.2f,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", minute, node, pid,
                    rssBytes, fds, fragmentFds, fdSoftLimit, tombstones, tombstoneFileBytes, storeBytes, fragments,
                    manifestsDeleted, heapBytes);
        }

        /** A line written by {@link #csv()}: a committed run's samples, read back to check its verdict. */
        static NodeSample parse(String line) {
            String[] f = line.split(",", -1);
            if (f.length != 13) {
                throw new IllegalArgumentException("a nodes.csv line has 13 fields, got " + f.length + ": " + line);
            }
            long[] n = new long[13];
            for (int i = 2; i < 13; i++) {
                n[i] = Long.parseLong(f[i]);
            }
            return new NodeSample(Double.parseDouble(f[0]), f[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9],
                    n[10], n[11], n[12]);
        }
    }

    private final ServiceStack stack;
    /** Last manifestsDeleted seen per "node/pid": a killed process keeps what it had counted. */
    private final Map<String, Long> deletedByProcess = new HashMap<>();

    NodeSampler(ServiceStack stack) {
        this.stack = stack;
    }

    /** Samples every live node process. */
    List<NodeSample> sample(double minute) throws IOException {
        Map<Long, JsonNode> statsByPid = new HashMap<>();
        Map<String, JsonNode> statsByStandalone = new HashMap<>();
        String out;
        try {
            out = stack.fragstateStatsJson();
        } catch (IllegalStateException e) {
            Report.step("fragstate stats failed (this sample has no node stats): " + e.getMessage());
            out = "";
        }
        for (String line : out.split("\\R")) {
            if (!line.startsWith("{")) {
                continue;
            }
            JsonNode s = JSON.readTree(line);
            String domain = s.path("domain").asText();
            if (domain.startsWith("standalone-")) {
                statsByStandalone.put("node-" + domain.substring("standalone-".length()), s);
            } else if (domain.contains("/")) {
                statsByPid.put(Long.parseLong(domain.substring(domain.lastIndexOf('/') + 1)), s);
            }
        }
        List<NodeSample> rows = new ArrayList<>();
        for (Map.Entry<String, Long> p : stack.nodeProcesses().entrySet()) {
            long pid = p.getValue();
            Path proc = Path.of("/proc", Long.toString(pid));
            if (!Files.isDirectory(proc)) {
                continue; // killed, not started again yet
            }
            JsonNode s = p.getKey().startsWith("node-") ? statsByStandalone.get(p.getKey()) : statsByPid.get(pid);
            long deleted = s == null ? -1 : s.path("manifestsDeleted").asLong();
            if (deleted >= 0) {
                deletedByProcess.put(p.getKey() + "/" + pid, deleted);
            }
            long[] fds = openFiles(proc);
            rows.add(new NodeSample(minute, p.getKey(), pid, rssBytes(proc), fds[0], fds[1], fdSoftLimit(proc),
                    figure(s, "tombstones"), figure(s, "tombstoneFileBytes"), figure(s, "bytes"), figure(s, "fragments"),
                    deleted, figure(s, "heapBytes")));
        }
        return rows;
    }

    /** Manifest copies removed by deletes, summed over every node process this run has had. */
    long manifestsDeletedTotal() {
        return deletedByProcess.values().stream().mapToLong(Long::longValue).sum();
    }

    private static long figure(JsonNode stats, String field) {
        return stats == null ? -1 : stats.path(field).asLong(-1);
    }

    /** VmRSS of {@code /proc/<pid>/status} in bytes. */
    private static long rssBytes(Path proc) {
        try {
            for (String line : Files.readAllLines(proc.resolve("status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // the process exited while it was read
        }
        return -1;
    }

    /** {all open fds, fds on a fragstate fragment file (a {@code fragments/} folder of a store)}. */
    private static long[] openFiles(Path proc) {
        long all = 0;
        long fragments = 0;
        try (var fds = Files.list(proc.resolve("fd"))) {
            for (Path fd : (Iterable<Path>) fds::iterator) {
                all++;
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.contains("/fragments/") && target.endsWith(".frag")) {
                        fragments++;
                    }
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        } catch (IOException e) {
            return new long[] {-1, -1};
        }
        return new long[] {all, fragments};
    }

    /** The soft "Max open files" of {@code /proc/<pid>/limits}. */
    private static long fdSoftLimit(Path proc) {
        try {
            for (String line : Files.readAllLines(proc.resolve("limits"))) {
                if (line.startsWith("Max open files")) {
                    String[] f = line.substring("Max open files".length()).trim().split("\\s+");
                    return f[0].equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(f[0]);
                }
            }
        } catch (IOException | NumberFormatException e) {
            // exited
        }
        return -1;
    }
}
