/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.StateBackendTestBase;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Flink's own {@link StateBackendTestBase} for {@link FragstateStateBackend} with the HashMap
 * local backend. The suite takes the backend itself as checkpoint storage (it implements {@code
 * CheckpointStorage}), so every snapshot and restore here goes through {@code fragstate://}.
 */
@ExtendWith(ParameterizedTestExtension.class)
class FragstateHashMapStateBackendTest extends StateBackendTestBase<FragstateStateBackend> {

    /** The suite's tests are templates; one invocation each. */
    @Parameters(name = "local-backend = hashmap")
    public static List<Object[]> modes() {
        return Collections.singletonList(new Object[0]);
    }

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
        c.set(FragstateOptions.LOCAL_BACKEND, "hashmap");
        c.set(FragstateOptions.CHECKPOINT_DIR, "fragstate://sbt-hashmap/checkpoints");
        // every snapshot goes to a file (no state inlined into the metadata)
        c.set(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD, MemorySize.ZERO);
        FragstateStateBackend backend = new FragstateStateBackend(c, getClass().getClassLoader());
        assertThat(backend.getLocalBackend()).isInstanceOf(HashMapStateBackend.class);
        return backend;
    }

    @Override
    protected boolean isSerializerPresenceRequiredOnRestore() {
        return true;
    }

    @Override
    protected boolean supportsAsynchronousSnapshots() {
        return true;
    }
}
