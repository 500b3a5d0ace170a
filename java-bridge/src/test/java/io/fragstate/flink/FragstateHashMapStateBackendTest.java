/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;

import org.junit.jupiter.api.extension.ExtendWith;

import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Flink's own {@code StateBackendTestBase} (see {@link FragstateStateBackendSuite}) with the
 * HashMap local backend.
 */
@ExtendWith(ParameterizedTestExtension.class)
class FragstateHashMapStateBackendTest extends FragstateStateBackendSuite {

    /** The suite's tests are templates; one invocation each. */
    @Parameters(name = "local-backend = hashmap")
    public static List<Object[]> modes() {
        return Collections.singletonList(new Object[0]);
    }

    @Override
    protected ConfigurableStateBackend getStateBackend() {
        Configuration c = fragstateConfig(FragstateOptions.LocalBackend.HASHMAP, "sbt-hashmap");
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
