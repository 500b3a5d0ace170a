/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import io.fragstate.flink.node.FragstateMetrics;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.runtime.state.StateBackendTestBase;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestTemplate;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the runs of Flink's {@link StateBackendTestBase} over {@link FragstateStateBackend} share:
 * the backend itself is the suite's checkpoint storage (it implements {@code CheckpointStorage}),
 * nothing is inlined into the metadata, and after the whole suite the node's counters must show
 * that snapshots were really written and read through {@code fragstate://}.
 */
abstract class FragstateStateBackendSuite extends StateBackendTestBase<FragstateStateBackend> {

    private static long writtenBefore;
    private static long openedBefore;
    private static int testsRun;

    @BeforeAll
    static void countersBefore() throws Exception {
        writtenBefore = FragstateMetrics.freshStats().at("/client/objectsWritten").asLong();
        openedBefore = FragstateMetrics.freshStats().at("/client/objectsOpened").asLong();
        testsRun = 0;
    }

    @AfterEach
    void countTest() {
        testsRun++;
    }

    /**
     * The suite really wrote and read its snapshots through fragstate://. That needs the whole
     * suite (a single test picked with -Dtest=Class#method may snapshot nothing), so a partial run
     * fails here instead of passing unchecked.
     */
    @AfterAll
    static void snapshotsWentThroughFragstate(TestInfo info) throws Exception {
        Class<?> testClass = info.getTestClass().orElseThrow();
        assertThat(testsRun)
                .as("tests of %s that ran; the check below needs the whole suite (run the class,"
                        + " not single methods)", testClass.getSimpleName())
                .isEqualTo(invocations(testClass));
        assertThat(FragstateMetrics.freshStats().at("/client/objectsWritten").asLong())
                .isGreaterThan(writtenBefore + 50);
        assertThat(FragstateMetrics.freshStats().at("/client/objectsOpened").asLong())
                .isGreaterThan(openedBefore + 50);
    }

    /** Every {@code @TestTemplate} of the suite, once per {@code @Parameters} entry of the class. */
    private static int invocations(Class<?> testClass) throws Exception {
        Set<String> templates = new HashSet<>();
        for (Class<?> c = testClass; c != null; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.isAnnotationPresent(TestTemplate.class)) {
                    templates.add(m.getName() + Arrays.toString(m.getParameterTypes()));
                }
            }
        }
        int parameters = 0;
        for (Method m : testClass.getDeclaredMethods()) {
            if (m.isAnnotationPresent(Parameters.class)) {
                parameters = ((Collection<?>) m.invoke(null)).size();
            }
        }
        return templates.size() * parameters;
    }

    /** The configuration of a backend with {@code localBackend} that checkpoints under {@code fragstate://authority/}. */
    static Configuration fragstateConfig(FragstateOptions.LocalBackend localBackend, String authority) {
        Configuration c = new Configuration();
        c.set(FragstateOptions.LOCAL_BACKEND, localBackend);
        c.set(FragstateOptions.CHECKPOINT_DIR, "fragstate://" + authority + "/checkpoints");
        // every snapshot goes to a file (no state inlined into the metadata)
        c.set(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD, MemorySize.ZERO);
        return c;
    }
}
