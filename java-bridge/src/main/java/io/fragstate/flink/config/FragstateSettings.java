/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.config;

import io.fragstate.flink.FragstateOptions;
import io.fragstate.flink.FragstateOptions.Adaptive;
import io.fragstate.flink.FragstateOptions.LocalBackend;
import io.fragstate.flink.FragstateOptions.Membership;
import io.fragstate.flink.FragstateOptions.Mode;
import io.fragstate.flink.fs.FragstateFileSystem;
import io.fragstate.flink.jni.FragstateNative;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.util.TimeUtils;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@link FragstateOptions} of one Flink configuration, checked against the bounds the Rust
 * core enforces ({@link NativeLimits}; so that a bad value fails at startup, naming the key, and
 * not at the first checkpoint) and rendered as the JSON that {@link FragstateNative#startNode}
 * takes.
 */
public final class FragstateSettings implements java.io.Serializable {

    private static final long serialVersionUID = 1L;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern ZSTD = Pattern.compile("zstd:(-?\\d+)");

    final Mode mode;
    final int dataFragments;
    final int parityFragments;
    final long cellSize;
    final String compression;
    final int localMeshNodes;
    final String storeDir;
    final Long storeMemory;
    final long scrubRate;
    final String listen;
    final List<String> bootstrap;
    final String clusterKeyFile;
    final String failureDomain;
    final Membership membership;
    final LocalBackend localBackend;
    final URI checkpointDir;
    final Duration storageWait;
    final Adaptive adaptive;
    final Duration adaptivePhase;
    final Double adaptiveMaxStorageOverhead;
    final boolean directoryIndex;

    private FragstateSettings(ReadableConfig config) {
        NativeLimits limits = NativeLimits.get();
        this.mode = getEnum(config, FragstateOptions.MODE, Mode.class);
        this.dataFragments = get(config, FragstateOptions.DATA_FRAGMENTS);
        requireWithin(FragstateOptions.DATA_FRAGMENTS, dataFragments, limits.dataFragments(), "k");
        this.parityFragments = get(config, FragstateOptions.PARITY_FRAGMENTS);
        requireWithin(FragstateOptions.PARITY_FRAGMENTS, parityFragments, limits.parityFragments(), "m");
        if (!limits.totalFragments().contains(dataFragments + parityFragments)) {
            throw bad(
                    FragstateOptions.PARITY_FRAGMENTS,
                    parityFragments,
                    "k + m ≤ " + limits.totalFragments().max()
                            + " (k = " + FragstateOptions.DATA_FRAGMENTS.key() + " = " + dataFragments + ")");
        }
        this.cellSize = get(config, FragstateOptions.CELL_SIZE).getBytes();
        NativeLimits.Range cells = limits.cellSize();
        if (!cells.contains(cellSize)) {
            throw bad(
                    FragstateOptions.CELL_SIZE,
                    cellSize + " bytes",
                    new MemorySize(cells.min()) + " ≤ cell size ≤ " + new MemorySize(cells.max()));
        }
        this.compression = parseCompression(get(config, FragstateOptions.COMPRESSION), limits.zstdLevel());
        this.localMeshNodes = get(config, FragstateOptions.LOCAL_MESH_NODES);
        if (mode == Mode.EMBEDDED && localMeshNodes < dataFragments + parityFragments) {
            throw bad(
                    FragstateOptions.LOCAL_MESH_NODES,
                    localMeshNodes,
                    "at least k + m = " + (dataFragments + parityFragments)
                            + " nodes (one fragment per node)");
        }
        requireWithin(FragstateOptions.LOCAL_MESH_NODES, localMeshNodes, limits.localMeshNodes(), "nodes");
        String dir = get(config, FragstateOptions.STORE_DIR);
        this.storeDir = dir == null || dir.isBlank() ? null : dir.trim();
        MemorySize mem = get(config, FragstateOptions.STORE_MEMORY);
        NativeLimits.Range memory = limits.storeMemory();
        if (mem != null && !memory.contains(mem.getBytes())) {
            String allowed = "at least " + new MemorySize(memory.min());
            if (memory.max() < Long.MAX_VALUE) {
                allowed += " and at most " + new MemorySize(memory.max());
            }
            throw bad(FragstateOptions.STORE_MEMORY, mem, allowed);
        }
        this.storeMemory = mem == null ? null : mem.getBytes();
        MemorySize scrub = get(config, FragstateOptions.SCRUB_RATE);
        NativeLimits.Range scrubs = limits.scrubRate();
        if (scrub == null || !scrubs.contains(scrub.getBytes())) {
            throw bad(
                    FragstateOptions.SCRUB_RATE,
                    scrub,
                    new MemorySize(scrubs.min()) + " (off) ≤ bytes per second ≤ " + new MemorySize(scrubs.max()));
        }
        this.scrubRate = scrub.getBytes();
        this.localBackend = getEnum(config, FragstateOptions.LOCAL_BACKEND, LocalBackend.class);
        this.checkpointDir = parseCheckpointDir(checkpointDirValue(config));
        this.storageWait = get(config, FragstateOptions.STORAGE_WAIT);
        if (storageWait.isNegative()) {
            throw bad(FragstateOptions.STORAGE_WAIT, storageWait, "0 s or more");
        }

        this.adaptive = getEnum(config, FragstateOptions.ADAPTIVE, Adaptive.class);
        this.adaptivePhase = get(config, FragstateOptions.ADAPTIVE_PHASE);
        NativeLimits.Range phases = limits.adaptivePhaseMs();
        if (!phases.contains(adaptivePhase.toMillis())) {
            throw bad(
                    FragstateOptions.ADAPTIVE_PHASE,
                    TimeUtils.formatWithHighestUnit(adaptivePhase),
                    TimeUtils.formatWithHighestUnit(Duration.ofMillis(phases.min())) + " ≤ phase ≤ "
                            + TimeUtils.formatWithHighestUnit(Duration.ofMillis(phases.max())));
        }
        this.adaptiveMaxStorageOverhead = get(config, FragstateOptions.ADAPTIVE_MAX_STORAGE_OVERHEAD);
        double own = (double) (dataFragments + parityFragments) / dataFragments;
        long overheadMax = limits.maxStorageOverhead().max();
        if (adaptiveMaxStorageOverhead != null
                && !(adaptiveMaxStorageOverhead >= own - 1e-9 && adaptiveMaxStorageOverhead <= overheadMax)) {
            throw bad(
                    FragstateOptions.ADAPTIVE_MAX_STORAGE_OVERHEAD,
                    adaptiveMaxStorageOverhead,
                    String.format(Locale.ROOT, "(k+m)/k of the configured parameters = %.3f ≤ overhead ≤ %d", own, overheadMax));
        }

        this.directoryIndex = get(config, FragstateOptions.DIRECTORY_INDEX);

        String key = get(config, FragstateOptions.CLUSTER_KEY_FILE);
        this.clusterKeyFile = key == null || key.isBlank() ? null : key.trim();
        if (mode == Mode.CLUSTER) {
            if (clusterKeyFile == null) {
                throw new IllegalConfigurationException(
                        "fragstate.mode = cluster needs "
                                + FragstateOptions.CLUSTER_KEY_FILE.key()
                                + " (a file with the cluster's pre-shared key): without it any host"
                                + " that reaches the port could join the mesh");
            }
            String l = get(config, FragstateOptions.LISTEN);
            this.listen = l == null || l.isBlank() ? null : requireMultiaddr(FragstateOptions.LISTEN, l.trim());
            this.bootstrap = bootstrap(config);
            this.failureDomain = failureDomain(get(config, FragstateOptions.FAILURE_DOMAIN));
            this.membership = getEnum(config, FragstateOptions.MEMBERSHIP, Membership.class);
        } else {
            this.listen = null;
            this.bootstrap = List.of();
            this.failureDomain = null;
            this.membership = null;
        }
    }

    /** Reads and checks every fragstate option; throws {@link IllegalConfigurationException}. */
    public static FragstateSettings fromConfig(ReadableConfig config) {
        return new FragstateSettings(config == null ? new Configuration() : config);
    }

    public Mode mode() {
        return mode;
    }

    public LocalBackend localBackend() {
        return localBackend;
    }

    public URI checkpointDir() {
        return checkpointDir;
    }

    public Duration storageWait() {
        return storageWait;
    }

    /** Cluster mode: the failure domain as configured ('host', 'process' or a label); else null. */
    public String failureDomain() {
        return failureDomain;
    }

    /**
     * The {@code startNode} argument. An unset cluster-mode listen address is resolved here, at
     * start, not when the settings are read: whether the fixed port is free changes once this
     * process's own node holds it.
     */
    public String toStartJson() {
        ObjectNode json = nodeConfig();
        if (mode == Mode.CLUSTER && listen == null) {
            json.put("listen", defaultListen());
        }
        return json.toString();
    }

    /** The settings as the node sees them (unset values left out); compared across entry points. */
    public String toNodeJson() {
        return nodeConfig().toString();
    }

    /** The flat JSON object {@link FragstateNative#startNode} documents. */
    private ObjectNode nodeConfig() {
        ObjectNode json = JSON.createObjectNode();
        json.put("mode", mode.toString());
        json.put("dataFragments", dataFragments);
        json.put("parityFragments", parityFragments);
        json.put("cellSize", cellSize);
        json.put("compression", compression);
        if (mode == Mode.EMBEDDED) {
            json.put("localMeshNodes", localMeshNodes);
        }
        json.put("storeDir", storeDir); // null: fragments in memory
        if (storeMemory != null) {
            json.put("storeMemory", storeMemory);
        }
        json.put("logLevel", logLevel());
        json.put("scrubRate", scrubRate);
        json.put("adaptive", adaptive.toString());
        json.put("adaptivePhaseMs", adaptivePhase.toMillis());
        if (adaptiveMaxStorageOverhead != null) {
            json.put("adaptiveMaxStorageOverhead", adaptiveMaxStorageOverhead);
        }
        json.put("directoryIndex", directoryIndex);
        if (mode == Mode.CLUSTER) {
            if (listen != null) {
                json.put("listen", listen);
            }
            bootstrap.forEach(json.putArray("bootstrap")::add);
            json.put("clusterKeyFile", clusterKeyFile);
            json.put("failureDomain", failureDomain);
            json.put("membership", membership.toString());
        }
        return json;
    }

    /** The native side logs through SLF4J ({@code jni.NativeLog}); it need not produce what SLF4J drops. */
    private static String logLevel() {
        org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger("fragstate");
        if (log.isTraceEnabled()) {
            return "trace";
        } else if (log.isDebugEnabled()) {
            return "debug";
        } else if (log.isInfoEnabled()) {
            return "info";
        } else if (log.isWarnEnabled()) {
            return "warn";
        }
        return "error";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof FragstateSettings
                && toNodeJson().equals(((FragstateSettings) o).toNodeJson())
                && localBackend == ((FragstateSettings) o).localBackend
                && checkpointDir.equals(((FragstateSettings) o).checkpointDir)
                && storageWait.equals(((FragstateSettings) o).storageWait);
    }

    @Override
    public int hashCode() {
        return Objects.hash(toNodeJson(), localBackend, checkpointDir, storageWait);
    }

    @Override
    public String toString() {
        return toNodeJson();
    }

    // ------------------------------------------------------------------------

    private static void requireWithin(ConfigOption<?> option, long value, NativeLimits.Range range, String name) {
        if (!range.contains(value)) {
            throw bad(option, value, range.min() + " ≤ " + name + " ≤ " + range.max());
        }
    }

    private static IllegalConfigurationException bad(ConfigOption<?> option, Object value, String allowed) {
        return new IllegalConfigurationException(
                "Invalid value '" + value + "' for " + option.key() + ": allowed is " + allowed);
    }

    /** {@code config.get} that turns a parse failure into a message naming key and raw value. */
    private static <T> T get(ReadableConfig config, ConfigOption<T> option) {
        try {
            return config.get(option);
        } catch (IllegalArgumentException e) {
            String raw = config.toMap().get(option.key());
            throw new IllegalConfigurationException(
                    "Invalid value '" + raw + "' for " + option.key() + ": " + e.getMessage(), e);
        }
    }

    /** {@code config.get} of an enum option (any case); a bad value names the allowed ones. */
    private static <E extends Enum<E>> E getEnum(ReadableConfig config, ConfigOption<E> option, Class<E> type) {
        try {
            return config.get(option);
        } catch (IllegalArgumentException e) {
            List<String> names = new ArrayList<>();
            for (E value : type.getEnumConstants()) {
                names.add(value.toString());
            }
            throw bad(option, config.toMap().get(option.key()), "one of " + String.join(" | ", names));
        }
    }

    private static String parseCompression(String v, NativeLimits.Range levels) {
        String s = v == null ? "" : v.trim().toLowerCase(Locale.ROOT);
        if (s.equals("none")) {
            return s;
        }
        if (s.equals("zstd")) {
            return "zstd:3";
        }
        Matcher m = ZSTD.matcher(s);
        if (m.matches()) {
            int level;
            try {
                level = Integer.parseInt(m.group(1));
            } catch (NumberFormatException e) {
                level = Integer.MIN_VALUE;
            }
            if (levels.contains(level)) {
                return "zstd:" + level;
            }
        }
        throw bad(
                FragstateOptions.COMPRESSION,
                v,
                "'none', 'zstd' or 'zstd:LEVEL' with " + levels.min() + " ≤ LEVEL ≤ " + levels.max());
    }

    /**
     * {@link FragstateOptions#CHECKPOINT_DIR} when set; else Flink's own {@code
     * execution.checkpointing.dir} if that names a {@code fragstate://} directory; else the
     * default.
     */
    private static String checkpointDirValue(ReadableConfig config) {
        if (config.getOptional(FragstateOptions.CHECKPOINT_DIR).isEmpty()) {
            String flinks = config.get(CheckpointingOptions.CHECKPOINTS_DIRECTORY);
            if (flinks != null && flinks.trim().toLowerCase(Locale.ROOT).startsWith(FragstateFileSystem.SCHEME + "://")) {
                return flinks.trim();
            }
        }
        return get(config, FragstateOptions.CHECKPOINT_DIR);
    }

    private static URI parseCheckpointDir(String v) {
        URI uri;
        try {
            uri = new URI(v == null ? "" : v.trim());
        } catch (URISyntaxException e) {
            throw bad(FragstateOptions.CHECKPOINT_DIR, v, "a fragstate://AUTHORITY/PATH URI");
        }
        if (!FragstateFileSystem.SCHEME.equalsIgnoreCase(uri.getScheme())
                || uri.getAuthority() == null
                || uri.getAuthority().isEmpty()) {
            throw bad(FragstateOptions.CHECKPOINT_DIR, v, "a fragstate://AUTHORITY/PATH URI");
        }
        return uri;
    }

    private static String requireMultiaddr(ConfigOption<String> option, String v) {
        if (!v.startsWith("/") || v.split("/").length < 3) {
            throw bad(option, v, "a multiaddr such as /ip4/0.0.0.0/tcp/6130");
        }
        return v;
    }

    /** 'host', 'process' or a printable label; the node resolves the first two (Rust side). */
    private static String failureDomain(String v) {
        String s = v == null ? "" : v.trim();
        boolean printable = !s.isEmpty() && s.length() <= 128 && s.chars().allMatch(c -> c >= 0x20 && c != 0x7f);
        if (!printable) {
            throw bad(
                    FragstateOptions.FAILURE_DOMAIN,
                    v,
                    "'host' (the host name), 'process' (<hostname>/<pid>) or a printable label of 1 … 128 characters");
        }
        return s;
    }

    private static List<String> bootstrap(ReadableConfig config) {
        String v = get(config, FragstateOptions.BOOTSTRAP);
        List<String> out = new ArrayList<>();
        if (v != null && !v.isBlank()) {
            for (String part : v.split(",")) {
                if (!part.isBlank()) {
                    out.add(requireMultiaddr(FragstateOptions.BOOTSTRAP, part.trim()));
                }
            }
            return out;
        }
        String host = config.get(JobManagerOptions.ADDRESS);
        if (host == null || host.isBlank()) {
            throw new IllegalConfigurationException(
                    "fragstate.mode = cluster: neither "
                            + FragstateOptions.BOOTSTRAP.key()
                            + " nor "
                            + JobManagerOptions.ADDRESS.key()
                            + " is set, so no node to join is known");
        }
        out.add(hostMultiaddr(host.trim(), FragstateOptions.DEFAULT_PORT));
        return out;
    }

    private static String hostMultiaddr(String host, int port) {
        String proto;
        if (host.matches("\\d{1,3}(\\.\\d{1,3}){3}")) {
            proto = "ip4";
        } else if (host.contains(":")) {
            proto = "ip6";
            host = host.replace("[", "").replace("]", "");
        } else {
            proto = "dns4";
        }
        return "/" + proto + "/" + host + "/tcp/" + port;
    }

    /** The fixed port if this process can still take it, else an ephemeral one. */
    private static String defaultListen() {
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new InetSocketAddress(InetAddress.getByName("0.0.0.0"), FragstateOptions.DEFAULT_PORT));
            return "/ip4/0.0.0.0/tcp/" + FragstateOptions.DEFAULT_PORT;
        } catch (IOException taken) {
            return "/ip4/0.0.0.0/tcp/0";
        }
    }
}
