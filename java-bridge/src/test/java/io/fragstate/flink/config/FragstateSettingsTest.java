/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.config;

import io.fragstate.flink.FragstateCheckpointStorageFactory;
import io.fragstate.flink.FragstateOptions;
import io.fragstate.flink.FragstateOptions.LocalBackend;
import io.fragstate.flink.FragstateOptions.Mode;
import io.fragstate.flink.FragstateStateBackendFactory;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.core.fs.FileSystem;

import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every bound of every option, and the JSON the node starts with. The bounds come from the native
 * library ({@link NativeLimits}); these tests check that Java applies each of them, at both ends.
 */
class FragstateSettingsTest {

    private static final NativeLimits LIMITS = NativeLimits.get();

    private static FragstateSettings settings(String... kv) {
        Configuration c = new Configuration();
        for (int i = 0; i < kv.length; i += 2) {
            c.setString(kv[i], kv[i + 1]);
        }
        return FragstateSettings.fromConfig(c);
    }

    /** Asserts the failure names the key, the value and the allowed range. */
    private static void rejects(String key, String value, String allowed, String... more) {
        String[] kv = new String[more.length + 2];
        kv[0] = key;
        kv[1] = value;
        System.arraycopy(more, 0, kv, 2, more.length);
        refused(kv).hasMessageContaining(allowed);
    }

    /** Asserts that {@code kv} (key and value first) fails naming the key and the value. */
    private static AbstractThrowableAssert<?, ? extends Throwable> refused(String... kv) {
        return assertThatThrownBy(() -> settings(kv))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContaining(kv[0])
                .hasMessageContaining(kv[1]);
    }

    /** The values just below and just above {@code range} are both refused. */
    private static void rejectsJustOutside(
            String key, String prefix, NativeLimits.Range range, String allowed, String... more) {
        rejects(key, prefix + (range.min() - 1), allowed, more);
        rejects(key, prefix + (range.max() + 1), allowed, more);
    }

    @Test
    void defaults() {
        FragstateSettings s = settings();
        assertThat(s.mode()).isEqualTo(Mode.EMBEDDED);
        assertThat(s.localBackend()).isEqualTo(LocalBackend.HASHMAP);
        assertThat(s.checkpointDir().toString()).isEqualTo("fragstate://flink/checkpoints");
        assertThat(s.toNodeJson())
                .startsWith(
                        "{\"mode\":\"embedded\",\"dataFragments\":4,\"parityFragments\":2,"
                                + "\"cellSize\":1048576,\"compression\":\"none\",\"localMeshNodes\":6,"
                                + "\"storeDir\":null,\"storeMemory\":4294967296,\"logLevel\":\"");
    }

    @Test
    void directoryIndexIsOffByDefaultAndSentToTheNode() {
        assertThat(settings().toNodeJson()).contains("\"directoryIndex\":false");
        assertThat(settings("fragstate.directory-index", "true").toNodeJson()).contains("\"directoryIndex\":true");
        refused("fragstate.directory-index", "sometimes");
    }

    @Test
    void adaptiveModeIsOnByDefaultAndSentToTheNodeWithItsBounds() {
        assertThat(settings().toNodeJson()).contains("\"adaptive\":\"on\",\"adaptivePhaseMs\":300000").doesNotContain("adaptiveMaxStorageOverhead");
        assertThat(settings("fragstate.adaptive", "Off").toNodeJson()).contains("\"adaptive\":\"off\"");
        assertThat(
                        settings(
                                        "fragstate.adaptive", "ON",
                                        "fragstate.adaptive.phase", "30 s",
                                        "fragstate.adaptive.max-storage-overhead", "2.0")
                                .toNodeJson())
                .contains("\"adaptive\":\"on\",\"adaptivePhaseMs\":30000,\"adaptiveMaxStorageOverhead\":2.0");
        refused("fragstate.adaptive", "maybe").hasMessageContaining("off | on");
        NativeLimits.Range phase = LIMITS.adaptivePhaseMs();
        rejects("fragstate.adaptive.phase", "500 ms", phase.min() / 1000 + " s ≤ phase");
        rejects("fragstate.adaptive.phase", "2 d", "≤ " + phase.max() / 86_400_000 + " d");
        // below RS(4,2)'s own 1.5, above the native bound, not a number
        rejects("fragstate.adaptive.max-storage-overhead", "1.4", "= 1.500 ≤ overhead ≤ " + LIMITS.maxStorageOverhead().max());
        rejects("fragstate.adaptive.max-storage-overhead", "4.5", "≤ overhead ≤ " + LIMITS.maxStorageOverhead().max());
        refused("fragstate.adaptive.max-storage-overhead", "lots");
        // the lower bound follows k and m: RS(2,2) needs at least 2.0
        rejects("fragstate.adaptive.max-storage-overhead", "1.5", "= 2.000 ≤ overhead",
                "fragstate.data-fragments", "2", "fragstate.parity-fragments", "2");
    }

    @Test
    void storageWait() {
        assertThat(settings().storageWait()).isEqualTo(java.time.Duration.ofSeconds(30));
        assertThat(settings("fragstate.storage-wait", "2 min").storageWait()).isEqualTo(java.time.Duration.ofMinutes(2));
        assertThat(settings("fragstate.storage-wait", "0 s").storageWait()).isZero();
        refused("fragstate.storage-wait", "soon");
    }

    @Test
    void dataFragmentsBounds() {
        NativeLimits.Range k = LIMITS.dataFragments();
        String allowed = k.min() + " ≤ k ≤ " + k.max();
        rejectsJustOutside("fragstate.data-fragments", "", k, allowed, "fragstate.parity-fragments", "0");
        assertThat(settings("fragstate.data-fragments", String.valueOf(k.min())).dataFragments).isEqualTo(k.min());
        assertThat(
                        settings(
                                        "fragstate.data-fragments", String.valueOf(k.max()),
                                        "fragstate.parity-fragments", "0",
                                        "fragstate.local-mesh.nodes", String.valueOf(k.max()))
                                .dataFragments)
                .isEqualTo(k.max());
    }

    @Test
    void parityFragmentsBounds() {
        NativeLimits.Range m = LIMITS.parityFragments();
        String allowed = m.min() + " ≤ m ≤ " + m.max();
        rejectsJustOutside("fragstate.parity-fragments", "", m, allowed, "fragstate.data-fragments", "1");
        assertThat(settings("fragstate.parity-fragments", String.valueOf(m.min())).parityFragments).isEqualTo(m.min());
    }

    @Test
    void totalFragmentsUpperBound() {
        long total = LIMITS.totalFragments().max();
        long k = total - 2;
        rejects(
                "fragstate.parity-fragments",
                "3",
                "k + m ≤ " + total + " (k = fragstate.data-fragments = " + k + ")",
                "fragstate.data-fragments",
                String.valueOf(k),
                "fragstate.local-mesh.nodes",
                String.valueOf(total));
        FragstateSettings s =
                settings(
                        "fragstate.data-fragments", String.valueOf(k),
                        "fragstate.parity-fragments", "2",
                        "fragstate.local-mesh.nodes", String.valueOf(total));
        assertThat(s.dataFragments + s.parityFragments).isEqualTo(total);
    }

    @Test
    void cellSizeBounds() {
        NativeLimits.Range cell = LIMITS.cellSize();
        String allowed = new MemorySize(cell.min()) + " ≤ cell size ≤ " + new MemorySize(cell.max());
        rejectsJustOutside("fragstate.cell-size", "", cell, allowed);
        assertThat(settings("fragstate.cell-size", cell.min() + " b").cellSize).isEqualTo(cell.min());
        assertThat(settings("fragstate.cell-size", cell.max() + " b").cellSize).isEqualTo(cell.max());
    }

    @Test
    void cellSizeUnparsable() {
        refused("fragstate.cell-size", "lots");
    }

    @Test
    void intOptionUnparsable() {
        refused("fragstate.data-fragments", "four");
    }

    @Test
    void zstdLevelBounds() {
        NativeLimits.Range level = LIMITS.zstdLevel();
        String allowed = level.min() + " ≤ LEVEL ≤ " + level.max();
        rejectsJustOutside("fragstate.compression", "zstd:", level, allowed);
        rejects("fragstate.compression", "zstd:99999999999", allowed);
        rejects("fragstate.compression", "gzip", "'none', 'zstd' or 'zstd:LEVEL'");
        assertThat(settings("fragstate.compression", "zstd:" + level.min()).compression).isEqualTo("zstd:" + level.min());
        assertThat(settings("fragstate.compression", "ZSTD:" + level.max()).compression).isEqualTo("zstd:" + level.max());
        assertThat(settings("fragstate.compression", "none").compression).isEqualTo("none");
        assertThat(settings("fragstate.compression", "zstd").compression).isEqualTo("zstd:3");
    }

    @Test
    void enumsNameTheirValues() {
        rejects("fragstate.local-backend", "forst", "hashmap | rocksdb");
        rejects("fragstate.mode", "p2p", "embedded | cluster");
        assertThat(settings("fragstate.local-backend", "RocksDB").localBackend())
                .isEqualTo(LocalBackend.ROCKSDB);
    }

    /**
     * The spellings OPTIONS.md documents (lower case) are read in any case, as config.yaml always
     * accepted them, and a value set in code is written back in the documented spelling.
     */
    @Test
    void enumOptionsKeepTheirDocumentedSpellings() {
        assertThat(settings("fragstate.local-backend", "hashmap").localBackend()).isEqualTo(LocalBackend.HASHMAP);
        assertThat(settings("fragstate.local-backend", "rocksdb").localBackend()).isEqualTo(LocalBackend.ROCKSDB);
        assertThat(settings("fragstate.local-backend", "ROCKSDB").localBackend()).isEqualTo(LocalBackend.ROCKSDB);
        assertThat(settings("fragstate.mode", "embedded").mode()).isEqualTo(Mode.EMBEDDED);
        assertThat(settings("fragstate.mode", "Embedded").mode()).isEqualTo(Mode.EMBEDDED);
        assertThat(settings("fragstate.mode", "CLUSTER", "fragstate.cluster-key-file", "/k", JobManagerOptions.ADDRESS.key(), "jm").mode())
                .isEqualTo(Mode.CLUSTER);
        Configuration c = new Configuration();
        c.set(FragstateOptions.MODE, Mode.CLUSTER);
        c.set(FragstateOptions.LOCAL_BACKEND, LocalBackend.ROCKSDB);
        assertThat(c.toMap())
                .containsEntry("fragstate.mode", "cluster")
                .containsEntry("fragstate.local-backend", "rocksdb");
    }

    @Test
    void localMeshMustHoldEveryFragment() {
        rejects("fragstate.local-mesh.nodes", "5", "at least k + m = 6");
        assertThat(settings("fragstate.local-mesh.nodes", "6").localMeshNodes).isEqualTo(6);
    }

    /** A mesh larger than the core starts fails here, naming the key, not later in the core. */
    @Test
    void localMeshUpperBound() {
        NativeLimits.Range nodes = LIMITS.localMeshNodes();
        String allowed = nodes.min() + " ≤ nodes ≤ " + nodes.max();
        assertThat(nodes.max()).isLessThan(100);
        rejects("fragstate.local-mesh.nodes", "100", allowed);
        rejects("fragstate.local-mesh.nodes", String.valueOf(nodes.max() + 1), allowed, "fragstate.parity-fragments", "0");
        assertThat(settings("fragstate.local-mesh.nodes", String.valueOf(nodes.max())).localMeshNodes)
                .isEqualTo(nodes.max());
    }

    @Test
    void storeMemoryLowerBound() {
        long min = LIMITS.storeMemory().min();
        rejects("fragstate.store.memory", (min - 1) + " b", "at least " + new MemorySize(min));
        assertThat(settings("fragstate.store.memory", min + " b").storeMemory).isEqualTo(min);
        assertThat(settings("fragstate.store.memory", "64mb").storeMemory).isEqualTo(64L << 20);
    }

    @Test
    void scrubRateBounds() {
        NativeLimits.Range r = LIMITS.scrubRate();
        assertThat(r.min()).as("0 turns the scrub off").isZero();
        assertThat(settings().scrubRate).isEqualTo(8L << 20);
        assertThat(settings().toNodeJson()).contains("\"scrubRate\":8388608");
        assertThat(settings("fragstate.scrub.rate", "0 b").scrubRate).isZero();
        assertThat(settings("fragstate.scrub.rate", r.max() + " b").scrubRate).isEqualTo(r.max());
        rejects("fragstate.scrub.rate", (r.max() + 1) + " b", "bytes per second ≤ " + new MemorySize(r.max()));
    }

    @Test
    void checkpointDirMustBeFragstateWithAuthority() {
        rejects("fragstate.checkpoint-dir", "file:///tmp/cp", "fragstate://AUTHORITY/PATH");
        rejects("fragstate.checkpoint-dir", "fragstate:///cp", "fragstate://AUTHORITY/PATH");
        assertThat(settings("fragstate.checkpoint-dir", "fragstate://prod/cp").checkpointDir().getAuthority())
                .isEqualTo("prod");
    }

    @Test
    void checkpointDirFallsBackToFlinksWhenThatIsFragstate() {
        assertThat(settings("execution.checkpointing.dir", "fragstate://prod/cp").checkpointDir().toString())
                .isEqualTo("fragstate://prod/cp");
        assertThat(settings("execution.checkpointing.dir", "file:///tmp/cp").checkpointDir().toString())
                .isEqualTo("fragstate://flink/checkpoints");
        assertThat(
                        settings(
                                        "execution.checkpointing.dir", "fragstate://prod/cp",
                                        "fragstate.checkpoint-dir", "fragstate://mine/cp")
                                .checkpointDir()
                                .toString())
                .isEqualTo("fragstate://mine/cp");
    }

    @Test
    void clusterModeNeedsAKeyFile() {
        assertThatThrownBy(() -> settings("fragstate.mode", "cluster", JobManagerOptions.ADDRESS.key(), "jm"))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContaining("fragstate.cluster-key-file");
    }

    @Test
    void clusterBootstrapDefaultsToTheJobManager() {
        FragstateSettings dns =
                settings(
                        "fragstate.mode", "cluster",
                        "fragstate.cluster-key-file", "/etc/fragstate/key",
                        "fragstate.listen", "/ip4/127.0.0.1/tcp/0",
                        JobManagerOptions.ADDRESS.key(), "jobmanager.example");
        assertThat(dns.bootstrap).containsExactly("/dns4/jobmanager.example/tcp/6130");
        assertThat(dns.toNodeJson())
                .contains("\"mode\":\"cluster\"")
                .contains("\"listen\":\"/ip4/127.0.0.1/tcp/0\"")
                .contains("\"bootstrap\":[\"/dns4/jobmanager.example/tcp/6130\"]")
                .contains("\"clusterKeyFile\":\"/etc/fragstate/key\"")
                .doesNotContain("localMeshNodes");
        FragstateSettings ip =
                settings(
                        "fragstate.mode", "cluster",
                        "fragstate.cluster-key-file", "/k",
                        "fragstate.listen", "/ip4/127.0.0.1/tcp/0",
                        JobManagerOptions.ADDRESS.key(), "10.1.2.3");
        assertThat(ip.bootstrap).containsExactly("/ip4/10.1.2.3/tcp/6130");
        FragstateSettings explicit =
                settings(
                        "fragstate.mode", "cluster",
                        "fragstate.cluster-key-file", "/k",
                        "fragstate.listen", "/ip4/127.0.0.1/tcp/0",
                        "fragstate.bootstrap", "/ip4/127.0.0.1/tcp/7001, /ip4/127.0.0.1/tcp/7002");
        assertThat(explicit.bootstrap).containsExactly("/ip4/127.0.0.1/tcp/7001", "/ip4/127.0.0.1/tcp/7002");
        FragstateSettings unsetListen =
                settings(
                        "fragstate.mode", "cluster",
                        "fragstate.cluster-key-file", "/k",
                        JobManagerOptions.ADDRESS.key(), "localhost");
        assertThat(unsetListen.toNodeJson()).doesNotContain("listen");
        assertThat(unsetListen.toStartJson()).containsPattern("\"listen\":\"/ip4/0\\.0\\.0\\.0/tcp/(6130|0)\"}$");
        rejects("fragstate.bootstrap", "127.0.0.1:6130", "multiaddr", "fragstate.mode", "cluster", "fragstate.cluster-key-file", "/k", "fragstate.listen", "/ip4/127.0.0.1/tcp/0");
    }

    /** A cluster-mode configuration that needs no network: fixed listen address and JobManager. */
    private static final String[] CLUSTER = {
        "fragstate.mode", "cluster",
        "fragstate.cluster-key-file", "/k",
        "fragstate.listen", "/ip4/127.0.0.1/tcp/0",
        JobManagerOptions.ADDRESS.key(), "localhost"
    };

    /** {@link #CLUSTER} and {@code kv}. */
    private static String[] cluster(String... kv) {
        String[] all = java.util.Arrays.copyOf(CLUSTER, CLUSTER.length + kv.length);
        System.arraycopy(kv, 0, all, CLUSTER.length, kv.length);
        return all;
    }

    @Test
    void failureDomainIsSentInClusterMode() {
        assertThat(settings(CLUSTER).toNodeJson()).contains("\"failureDomain\":\"host\"");
        assertThat(settings(cluster("fragstate.failure-domain", " process ")).toNodeJson()).contains("\"failureDomain\":\"process\"");
        String[] rack = cluster("fragstate.failure-domain", "rack-7");
        assertThat(settings(rack).toNodeJson()).contains("\"failureDomain\":\"rack-7\"");
        assertThat(settings(rack).toStartJson()).contains("\"failureDomain\":\"rack-7\"");
        // embedded mode has no network node: the option is not sent
        assertThat(settings("fragstate.failure-domain", "process").toNodeJson()).doesNotContain("failureDomain");
        rejects("fragstate.failure-domain", " ", "'process'", CLUSTER);
        rejects("fragstate.failure-domain", "a\tb", "printable", CLUSTER);
        rejects("fragstate.failure-domain", "x".repeat(129), "128 characters", CLUSTER);
    }

    @Test
    void membershipIsSentInClusterMode() {
        assertThat(settings(CLUSTER).toNodeJson()).contains("\"membership\":\"swim\"");
        assertThat(settings(cluster("fragstate.membership", "MESH")).toStartJson()).contains("\"membership\":\"mesh\"");
        assertThat(settings("fragstate.membership", "swim").toNodeJson()).doesNotContain("membership");
        rejects("fragstate.membership", "gossip", "one of mesh | swim", CLUSTER);
    }

    @Test
    void jsonEscapesStrings() {
        assertThat(settings("fragstate.store.dir", "/tmp/a \"b\"\\c").toNodeJson())
                .contains("\"storeDir\":\"/tmp/a \\\"b\\\"\\\\c\"");
    }

    @Test
    void fileSystemInitializeFailsOnABadValue() {
        Configuration bad = Configuration.fromMap(Map.of("fragstate.data-fragments", "0"));
        try {
            assertThatThrownBy(() -> FileSystem.initialize(bad, null))
                    .isInstanceOf(IllegalConfigurationException.class)
                    .hasMessageContaining("fragstate.data-fragments");
        } finally {
            FileSystem.initialize(new Configuration(), null);
        }
    }

    @Test
    void stateBackendFactoryFailsOnABadValue() {
        Configuration bad = Configuration.fromMap(Map.of("fragstate.cell-size", "1b"));
        assertThatThrownBy(
                        () -> new FragstateStateBackendFactory().createFromConfig(bad, getClass().getClassLoader()))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContaining("fragstate.cell-size");
        assertThatThrownBy(
                        () -> new FragstateCheckpointStorageFactory().createFromConfig(bad, getClass().getClassLoader()))
                .isInstanceOf(IllegalConfigurationException.class)
                .hasMessageContaining("fragstate.cell-size");
    }
}
