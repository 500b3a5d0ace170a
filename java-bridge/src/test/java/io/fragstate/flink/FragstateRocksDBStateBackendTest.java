/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.StateBackendTestBase;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.state.rocksdb.RocksDBOptions;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameter;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Flink's own {@link StateBackendTestBase} for {@link FragstateStateBackend} with the RocksDB
 * local backend, full and incremental; snapshots go through {@code fragstate://}.
 */
@ExtendWith(ParameterizedTestExtension.class)
class FragstateRocksDBStateBackendTest extends StateBackendTestBase<FragstateStateBackend> {

    @Parameters(name = "incremental = {0}")
    public static List<Object[]> modes() {
        return Arrays.asList(new Object[] {false}, new Object[] {true});
    }

    @Parameter public boolean incremental;

    private static long writtenBefore;
    private static long openedBefore;

    @BeforeAll
    static void countersBefore() throws Exception {
        writtenBefore = FragstateMetrics.value(FragstateMetrics.freshStats(), "client.objectsWritten");
        openedBefore = FragstateMetrics.value(FragstateMetrics.freshStats(), "client.objectsOpened");
    }

    private static int testsRun;

    @AfterEach
    void countTest() {
        testsRun++;
    }

    /**
     * The suite really wrote and read its snapshots through fragstate://. Checked when the whole
     * suite ran (a single test picked with -Dtest=Class#method may snapshot nothing).
     */
    @AfterAll
    static void snapshotsWentThroughFragstate() throws Exception {
        if (testsRun < 60) {
            return;
        }
        assertThat(FragstateMetrics.value(FragstateMetrics.freshStats(), "client.objectsWritten"))
                .isGreaterThan(writtenBefore + 50);
        assertThat(FragstateMetrics.value(FragstateMetrics.freshStats(), "client.objectsOpened"))
                .isGreaterThan(openedBefore + 50);
    }

    @Override
    protected ConfigurableStateBackend getStateBackend() {
        Configuration c = new Configuration();
        c.set(FragstateOptions.LOCAL_BACKEND, "rocksdb");
        c.set(FragstateOptions.CHECKPOINT_DIR, "fragstate://sbt-rocksdb/checkpoints");
        c.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, incremental);
        // The suite's mock environment has a few MiB of managed memory, which makes RocksDB flush
        // its memtable on nearly every write (2.5 min of fsyncs on 2 cores); RocksDB memory
        // tuning is not what this suite checks.
        c.set(RocksDBOptions.USE_MANAGED_MEMORY, false);
        // every snapshot goes to a file (no state inlined into the metadata)
        c.set(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD, MemorySize.ZERO);
        FragstateStateBackend backend = new FragstateStateBackend(c, getClass().getClassLoader());
        assertThat(backend.getLocalBackend()).isInstanceOf(EmbeddedRocksDBStateBackend.class);
        assertThat(((EmbeddedRocksDBStateBackend) backend.getLocalBackend()).isIncrementalCheckpointsEnabled())
                .isEqualTo(incremental);
        return backend;
    }

    @Override
    protected boolean isSerializerPresenceRequiredOnRestore() {
        return false;
    }

    @Override
    protected boolean supportsAsynchronousSnapshots() {
        return true;
    }

    @Override
    protected boolean isSafeToReuseKVState() {
        return true;
    }
}
