/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.runtime.state.StateBackendFactory;

/** For {@code state.backend.type: io.fragstate.flink.FragstateStateBackendFactory}. */
public class FragstateStateBackendFactory implements StateBackendFactory<FragstateStateBackend> {

    @Override
    public FragstateStateBackend createFromConfig(ReadableConfig config, ClassLoader classLoader)
            throws IllegalConfigurationException {
        return new FragstateStateBackend(config, classLoader);
    }
}
