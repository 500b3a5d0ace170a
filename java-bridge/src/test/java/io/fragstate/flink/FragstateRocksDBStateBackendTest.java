/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameter;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;

import org.junit.jupiter.api.extension.ExtendWith;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Flink's own {@code StateBackendTestBase} (see {@link FragstateStateBackendSuite}) with the
 * RocksDB local backend, full and incremental.
 */
@ExtendWith(ParameterizedTestExtension.class)
class FragstateRocksDBStateBackendTest extends FragstateStateBackendSuite {

    @Parameters(name = "incremental = {0}")
    public static List<Object[]> modes() {
        return Arrays.asList(new Object[] {false}, new Object[] {true});
    }

    @Parameter public boolean incremental;

    @Override
    protected ConfigurableStateBackend getStateBackend() {
        Configuration c = fragstateConfig(FragstateOptions.LocalBackend.ROCKSDB, "sbt-rocksdb");
        c.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, incremental);
        // The suite's mock environment has a few MiB of managed memory, which makes RocksDB flush
        // its memtable on nearly every write (2.5 min of fsyncs on 2 cores); RocksDB memory
        // tuning is not what this suite checks.
        // (RocksDBOptions.USE_MANAGED_MEMORY, by key: the class moved packages in Flink 2.0)
        c.set(ConfigOptions.key("state.backend.rocksdb.memory.managed").booleanType().noDefaultValue(), false);
        FragstateStateBackend backend = new FragstateStateBackend(c, getClass().getClassLoader());
        StateBackend local = backend.getLocalBackend();
        assertThat(local.getClass().getSimpleName()).isEqualTo("EmbeddedRocksDBStateBackend");
        assertThat(incrementalEnabled(local)).isEqualTo(incremental);
        return backend;
    }

    /** {@code EmbeddedRocksDBStateBackend#isIncrementalCheckpointsEnabled}, whichever package the class is in. */
    private static boolean incrementalEnabled(StateBackend rocksDb) {
        try {
            return (Boolean) rocksDb.getClass().getMethod("isIncrementalCheckpointsEnabled").invoke(rocksDb);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("not Flink's RocksDB backend: " + rocksDb.getClass(), e);
        }
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
