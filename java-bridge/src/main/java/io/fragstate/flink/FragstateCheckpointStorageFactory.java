/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.runtime.state.CheckpointStorageFactory;

/** For {@code execution.checkpointing.storage: io.fragstate.flink.FragstateCheckpointStorageFactory}. */
public class FragstateCheckpointStorageFactory implements CheckpointStorageFactory<FragstateCheckpointStorage> {

    @Override
    public FragstateCheckpointStorage createFromConfig(ReadableConfig config, ClassLoader classLoader)
            throws IllegalConfigurationException {
        return new FragstateCheckpointStorage(config);
    }
}
