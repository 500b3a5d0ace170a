/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import io.fragstate.flink.node.FragstateNode;

import org.apache.flink.api.common.JobID;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageAccess;

import java.io.IOException;

/**
 * Flink's own {@link FsCheckpointStorageAccess} on {@code fragstate://} (so file merging and every
 * {@code instanceof} check in Flink still apply), with one addition: before the checkpoint
 * coordinator (JobManager) creates the job's base directories it waits until {@code k + m}
 * fragments can be placed, up to {@code fragstate.storage-wait}, and fails the job naming the
 * options otherwise. Only the coordinator calls {@link #initializeBaseLocationsForCheckpoint()};
 * tasks, which restore state, never wait for write capacity: a restore only reads.
 */
final class FragstateCheckpointStorageAccess extends FsCheckpointStorageAccess {

    FragstateCheckpointStorageAccess(
            Path checkpoints, Path savepoints, boolean checkpointSubDirs, JobID jobId, int fileSizeThreshold, int writeBufferSize)
            throws IOException {
        super(checkpoints, savepoints, checkpointSubDirs, jobId, fileSizeThreshold, writeBufferSize);
    }

    @Override
    public void initializeBaseLocationsForCheckpoint() throws IOException {
        FragstateNode.awaitPlacement();
        super.initializeBaseLocationsForCheckpoint();
    }
}
