/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import io.fragstate.flink.config.FragstateSettings;
import io.fragstate.flink.fs.FragstateFileSystem;
import io.fragstate.flink.node.FragstateNode;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.CheckpointStorage;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.CompletedCheckpointStorageLocation;
import org.apache.flink.runtime.state.ConfigurableCheckpointStorage;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;

import java.io.IOException;
import java.net.URI;

/**
 * Checkpoint storage on {@code fragstate://}: Flink's own {@link FileSystemCheckpointStorage}
 * pointed at {@link FragstateOptions#CHECKPOINT_DIR}, so checkpoint and savepoint metadata record
 * plain {@code FileStateHandle}s that stock Flink reads back. It also carries the node settings,
 * so that the TaskManager that deserializes it starts its node with the job's options.
 */
public class FragstateCheckpointStorage implements CheckpointStorage, ConfigurableCheckpointStorage {

    private static final long serialVersionUID = 1L;

    private final FragstateSettings settings;
    private final FileSystemCheckpointStorage delegate;
    private final boolean checkpointSubDirs;

    /** With the options of {@code config} (defaults for everything unset). */
    public FragstateCheckpointStorage(ReadableConfig config) {
        this(FragstateSettings.fromConfig(config), config);
    }

    FragstateCheckpointStorage(FragstateSettings settings, ReadableConfig config) {
        this.settings = settings;
        URI dir = settings.checkpointDir();
        Configuration c = new Configuration();
        config.toMap().forEach(c::setString);
        if (c.get(CheckpointingOptions.SAVEPOINT_DIRECTORY) == null) {
            c.set(CheckpointingOptions.SAVEPOINT_DIRECTORY, FragstateFileSystem.SCHEME + "://" + dir.getAuthority() + "/savepoints");
        }
        try {
            this.delegate =
                    new FileSystemCheckpointStorage(new Path(dir), -1, -1)
                            .configure(c, Thread.currentThread().getContextClassLoader());
        } catch (IllegalArgumentException e) {
            throw new IllegalConfigurationException("fragstate: invalid checkpoint storage configuration: " + e.getMessage(), e);
        }
        this.checkpointSubDirs = c.get(CheckpointingOptions.CREATE_CHECKPOINT_SUB_DIR);
        FragstateNode.configure(settings);
    }

    @Override
    public FragstateCheckpointStorage configure(ReadableConfig config, ClassLoader classLoader) {
        return new FragstateCheckpointStorage(config);
    }

    @Override
    public CompletedCheckpointStorageLocation resolveCheckpoint(String externalPointer) throws IOException {
        FragstateNode.configure(settings);
        return delegate.resolveCheckpoint(externalPointer);
    }

    /**
     * Runs when the JobManager sets up the job's checkpoint coordinator and in every task. The
     * placement check happens only on the coordinator's side ({@link
     * FragstateCheckpointStorageAccess}): a cluster that cannot hold {@code k + m} fragments fails
     * the job at submission, naming the options, while a task that restores after a loss never
     * waits for nodes it only needs for writing.
     */
    @Override
    public CheckpointStorageAccess createCheckpointStorage(JobID jobId) throws IOException {
        FragstateNode.configure(settings);
        return new FragstateCheckpointStorageAccess(
                delegate.getCheckpointPath(),
                delegate.getSavepointPath(),
                checkpointSubDirs,
                jobId,
                delegate.getMinFileSizeThreshold(),
                delegate.getWriteBufferSize());
    }

    public Path getCheckpointPath() {
        return delegate.getCheckpointPath();
    }

    public Path getSavepointPath() {
        return delegate.getSavepointPath();
    }

    FragstateSettings settings() {
        return settings;
    }

    @Override
    public String toString() {
        return "FragstateCheckpointStorage{checkpoints=" + getCheckpointPath() + ", savepoints=" + getSavepointPath() + "}";
    }
}
