/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.MemorySize;

import java.time.Duration;
import java.util.Locale;

/**
 * Every fragstate option, in one place (Flink's own plugins do the same). Values are checked by
 * {@link io.fragstate.flink.config.FragstateSettings#fromConfig} against the bounds the native
 * core reports ({@link io.fragstate.flink.config.NativeLimits}; this class copies none); a bad
 * one fails at startup with an {@link
 * org.apache.flink.configuration.IllegalConfigurationException} naming the key, the value and
 * what is allowed. {@code java-bridge/OPTIONS.md} is checked against this class, and the ranges
 * it documents against the native bounds, by a test.
 */
public final class FragstateOptions {

    private FragstateOptions() {}

    /** The JobManager node's fixed port: the default bootstrap address of every other node. */
    public static final int DEFAULT_PORT = 6130;

    /** Values of {@link #MODE}; written and shown in lower case, read in any case. */
    public enum Mode {
        EMBEDDED,
        CLUSTER;

        @Override
        public String toString() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Values of {@link #ADAPTIVE}; written and shown in lower case, read in any case. */
    public enum Adaptive {
        OFF,
        ON;

        @Override
        public String toString() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Values of {@link #MEMBERSHIP}; written and shown in lower case, read in any case. */
    public enum Membership {
        MESH,
        SWIM;

        @Override
        public String toString() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Values of {@link #LOCAL_BACKEND}; written and shown in lower case, read in any case. */
    public enum LocalBackend {
        HASHMAP,
        ROCKSDB;

        @Override
        public String toString() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public static final ConfigOption<Mode> MODE =
            ConfigOptions.key("fragstate.mode")
                    .enumType(Mode.class)
                    .defaultValue(Mode.EMBEDDED)
                    .withDescription(
                            "'embedded': an in-process mesh of fragstate.local-mesh.nodes nodes"
                                    + " in every JVM (MiniCluster, IDE, single-process tests; state"
                                    + " does not survive the loss of that JVM). 'cluster': one"
                                    + " networked node per JobManager/TaskManager process, started"
                                    + " with the process (needs fragstate.cluster-key-file).");

    public static final ConfigOption<Integer> DATA_FRAGMENTS =
            ConfigOptions.key("fragstate.data-fragments")
                    .intType()
                    .defaultValue(4)
                    .withDescription(
                            "k: data cells per stripe; any k of the k+m fragments rebuild an"
                                    + " object. 1 ≤ k and k+m ≤ 32.");

    public static final ConfigOption<Integer> PARITY_FRAGMENTS =
            ConfigOptions.key("fragstate.parity-fragments")
                    .intType()
                    .defaultValue(2)
                    .withDescription(
                            "m: Reed–Solomon parity cells per stripe = node losses survived."
                                    + " 0 ≤ m and k+m ≤ 32.");

    public static final ConfigOption<MemorySize> CELL_SIZE =
            ConfigOptions.key("fragstate.cell-size")
                    .memoryType()
                    .defaultValue(MemorySize.parse("1m"))
                    .withDescription("Bytes per cell (a stripe holds k cells of data). 4 kb … 64 mb.");

    public static final ConfigOption<String> COMPRESSION =
            ConfigOptions.key("fragstate.compression")
                    .stringType()
                    .defaultValue("none")
                    .withDescription(
                            "'none', 'zstd' (level 3) or 'zstd:LEVEL' with 1 ≤ LEVEL ≤ 19, applied before erasure"
                                    + " coding. zstd pays only where the network is slower than"
                                    + " zstd itself (≈ 0.34 GB/s per core at level 1).");

    public static final ConfigOption<String> LISTEN =
            ConfigOptions.key("fragstate.listen")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Cluster mode: the multiaddr this process's node listens on, an IP address"
                                    + " and a TCP port (/ip4/A/tcp/P or /ip6/A/tcp/P; a host name is refused"
                                    + " naming the address). Default:"
                                    + " /ip4/0.0.0.0/tcp/6130 when that port is free (the first"
                                    + " process on the JobManager host, which the others bootstrap"
                                    + " from), else /ip4/0.0.0.0/tcp/0 (an ephemeral port).");

    public static final ConfigOption<String> BOOTSTRAP =
            ConfigOptions.key("fragstate.bootstrap")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Cluster mode: comma-separated multiaddrs of nodes to join: /ip4/A/tcp/P,"
                                    + " /ip6/A/tcp/P or a host name /dns4|dns6|dns/HOST/tcp/P (resolved at every"
                                    + " dial through /etc/hosts and DNS; an address that cannot be resolved or"
                                    + " reached is logged as a WARN naming it and retried every 3 s while the"
                                    + " node is alone). Default: the JobManager's node,"
                                    + " /ip4|dns4/<jobmanager.rpc.address>/tcp/6130.");

    public static final ConfigOption<String> CLUSTER_KEY_FILE =
            ConfigOptions.key("fragstate.cluster-key-file")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Cluster mode (required there): a file holding the cluster's"
                                    + " pre-shared key; only nodes that hold it can connect.");

    public static final ConfigOption<String> FAILURE_DOMAIN =
            ConfigOptions.key("fragstate.failure-domain")
                    .stringType()
                    .defaultValue("host")
                    .withDescription(
                            "Cluster mode: the failure domain of this process's node; placement"
                                    + " puts at most one fragment of an object per domain. 'host':"
                                    + " the host name (one fragment per machine). 'process':"
                                    + " <hostname>/<pid> (one per JVM; for clusters whose JVMs share"
                                    + " one host, such as tests and demos: losing that host loses"
                                    + " every fragment). Anything else: that literal label, e.g."
                                    + " a rack name (printable, at most 128 characters).");

    public static final ConfigOption<Membership> MEMBERSHIP =
            ConfigOptions.key("fragstate.membership")
                    .enumType(Membership.class)
                    .defaultValue(Membership.SWIM)
                    .withDescription(
                            "Cluster mode: how nodes learn which peers are live; one value for the"
                                    + " whole cluster (nodes of different values do not see each other)."
                                    + " 'swim' (the default): SWIM gossip, with connections only to the"
                                    + " peers a node talks to (closed after 5 s unused); a killed node is"
                                    + " avoided at once by the nodes whose connection to it broke and known"
                                    + " dead cluster-wide after its suspicion timeout (at least 3 s)."
                                    + " 'mesh' (the default before 2026-12-05): every node connects to"
                                    + " every other and pings each; right for tens of nodes. Standalone"
                                    + " nodes take the same choice as `fragstate node --membership`"
                                    + " (NETWORK.md).");

    public static final ConfigOption<Duration> STORAGE_WAIT =
            ConfigOptions.key("fragstate.storage-wait")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(30))
                    .withDescription(
                            "How long a job's start waits until its checkpoints can be placed: k + m"
                                    + " live storage nodes besides the writer's own, one per failure"
                                    + " domain. Past it the job fails with an error naming k, m and"
                                    + " the live counts, instead of running without checkpoints."
                                    + " 0 s checks once.");

    public static final ConfigOption<String> STORE_DIR =
            ConfigOptions.key("fragstate.store.dir")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Directory for the fragments this process's node holds, so they"
                                    + " survive a restart of the process or the whole cluster. Cluster"
                                    + " mode: each process takes the first node-N subdirectory no"
                                    + " running process holds (a lock file), so the TaskManagers of one"
                                    + " host can share the setting; the node's identity is kept there"
                                    + " too. Embedded mode: mesh-N subdirectories. Unset: fragments"
                                    + " are kept in memory and lost with the process.");

    public static final ConfigOption<MemorySize> STORE_MEMORY =
            ConfigOptions.key("fragstate.store.memory")
                    .memoryType()
                    .defaultValue(MemorySize.parse("4g"))
                    .withDescription(
                            "Byte budget of the fragment stores of this process (split evenly over"
                                    + " an embedded mesh; at least 4 kb). A full store fails the write"
                                    + " with a clear error; nothing is dropped silently.");

    public static final ConfigOption<MemorySize> SCRUB_RATE =
            ConfigOptions.key("fragstate.scrub.rate")
                    .memoryType()
                    .defaultValue(MemorySize.parse("8m"))
                    .withDescription(
                            "Bytes per second of stored fragments this process's node re-reads and"
                                    + " checks against their checksums in the background (split evenly"
                                    + " over an embedded mesh). A bad cell (bit rot, a torn write) is"
                                    + " rebuilt from the other holders and written back. 0 b turns the"
                                    + " background pass off; cells that readers find corrupt are reported"
                                    + " to their holder and rebuilt either way. At most 16 gb.");

    public static final ConfigOption<Adaptive> ADAPTIVE =
            ConfigOptions.key("fragstate.adaptive")
                    .enumType(Adaptive.class)
                    .defaultValue(Adaptive.ON)
                    .withDescription(
                            "'on' (the default): adaptive mode (A-FP4S). Each process's node measures"
                                    + " its peers while it uploads and reads (and probes those no upload"
                                    + " measured for 30 s); a node measured at least 2x slower than the"
                                    + " median gets only the fragments the others cannot take, and"
                                    + " parity rather than data; once per fragstate.adaptive.phase the"
                                    + " coding parameters of new objects (k, m, cell size, zstd:1 or none)"
                                    + " are chosen to minimise the predicted restore time, with m never"
                                    + " below fragstate.parity-fragments and (k+m)/k never above"
                                    + " fragstate.adaptive.max-storage-overhead. Decisions are logged with"
                                    + " their inputs and shown as metrics; written checkpoints keep their"
                                    + " parameters. 'off': every object gets the configured parameters and"
                                    + " placement by free space alone.");

    public static final ConfigOption<Duration> ADAPTIVE_PHASE =
            ConfigOptions.key("fragstate.adaptive.phase")
                    .durationType()
                    .defaultValue(Duration.ofMinutes(5))
                    .withDescription(
                            "Adaptive mode: how often the parameters of new objects are reconsidered."
                                    + " 1 s … 1 d.");

    public static final ConfigOption<Double> ADAPTIVE_MAX_STORAGE_OVERHEAD =
            ConfigOptions.key("fragstate.adaptive.max-storage-overhead")
                    .doubleType()
                    .noDefaultValue()
                    .withDescription(
                            "Adaptive mode: stored bytes per state byte, (k+m)/k, that a chosen setting"
                                    + " may use at most; from the configured parameters' own (k+m)/k"
                                    + " (the default) up to 4.");

    public static final ConfigOption<Boolean> DIRECTORY_INDEX =
            ConfigOptions.key("fragstate.directory-index")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Whether this process's client keeps each directory's index on the k+m"
                                    + " nodes that hold it, so that Flink's directory questions (exists,"
                                    + " mkdirs, a checkpoint directory's delete) ask k+m nodes instead of"
                                    + " every node (rust-core/NETWORK.md, \"What still goes to every node\")."
                                    + " Off by default: it costs every commit and delete one more round of"
                                    + " k+m requests (10-minute soaks: checkpoints took 1.2x as long on 8"
                                    + " nodes, 1.09x on 24) and saves more requests the more nodes there are:"
                                    + " turn it on from about 40 nodes. One value for the whole cluster.");

    public static final ConfigOption<LocalBackend> LOCAL_BACKEND =
            ConfigOptions.key("fragstate.local-backend")
                    .enumType(LocalBackend.class)
                    .defaultValue(LocalBackend.HASHMAP)
                    .withDescription(
                            "Where FragstateStateBackend keeps working state: 'hashmap' (Flink's"
                                    + " HashMapStateBackend) or 'rocksdb' (EmbeddedRocksDBStateBackend;"
                                    + " full or incremental per execution.checkpointing.incremental).");

    public static final ConfigOption<Integer> LOCAL_MESH_NODES =
            ConfigOptions.key("fragstate.local-mesh.nodes")
                    .intType()
                    .defaultValue(6)
                    .withDescription(
                            "Embedded mode: nodes of the in-process mesh; at least k+m, at most 64.");

    public static final ConfigOption<String> CHECKPOINT_DIR =
            ConfigOptions.key("fragstate.checkpoint-dir")
                    .stringType()
                    .defaultValue("fragstate://flink/checkpoints")
                    .withDescription(
                            "Where FragstateStateBackend / FragstateCheckpointStorage put"
                                    + " checkpoints; a fragstate:// URI. Unset: Flink's"
                                    + " execution.checkpointing.dir if that is a fragstate:// URI,"
                                    + " else this default. Savepoints go to"
                                    + " execution.checkpointing.savepoint-dir when set, else to"
                                    + " fragstate://<authority of this dir>/savepoints.");
}
