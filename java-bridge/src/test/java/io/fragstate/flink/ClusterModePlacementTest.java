/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import io.fragstate.flink.config.FragstateSettings;
import io.fragstate.flink.jni.FragstateNative;
import io.fragstate.flink.jni.PlacementException;
import io.fragstate.flink.node.FragstateNode;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageAccess;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A cluster-mode node that finds fewer storage nodes than a job's {@code k + m}: the checkpoint
 * coordinator's setup (what the JobManager does when it sets up the job) fails with an error naming
 * the options and the counts, instead of letting the job run with every checkpoint failing; a task
 * that creates the same storage to restore never waits for write capacity. The passing side runs
 * on a real cluster in {@code integration-tests}.
 */
class ClusterModePlacementTest {

    @TempDir Path dir;

    @AfterEach
    void backToTheDefaultNode() {
        FragstateNode.stop();
        FragstateNode.configure(FragstateSettings.fromConfig(null));
    }

    private Configuration aloneInCluster(String storageWait) throws IOException {
        Path key = ClusterKeys.write(dir);
        Configuration c = new Configuration();
        c.setString("fragstate.mode", "cluster");
        c.setString("fragstate.cluster-key-file", key.toString());
        c.setString("fragstate.listen", "/ip4/127.0.0.1/tcp/0");
        // nothing listens there: this node stays alone
        c.setString("fragstate.bootstrap", "/ip4/127.0.0.1/tcp/1");
        c.setString("fragstate.storage-wait", storageWait);
        FragstateNode.stop(); // an embedded node of an earlier test class would ignore the settings
        return c;
    }

    @Test
    void tooFewStorageNodesFailTheJobNamingTheOptions() throws IOException {
        FragstateCheckpointStorage storage = new FragstateCheckpointStorage(aloneInCluster("300 ms"));
        // What the checkpoint coordinator does when the JobManager sets up the job.
        CheckpointStorageAccess coordinatorView = storage.createCheckpointStorage(new JobID());

        assertThatThrownBy(coordinatorView::initializeBaseLocationsForCheckpoint)
                .isInstanceOf(IOException.class)
                .hasMessageContaining("cannot place 6 fragments (k=4 + m=2): only 0 usable storage nodes")
                .hasMessageContaining("fragstate.data-fragments (k) + fragstate.parity-fragments (m)")
                .hasMessageContaining("fragstate.failure-domain (here: host)")
                .hasMessageContaining("fragstate.storage-wait")
                .cause()
                .isInstanceOfSatisfying(
                        PlacementException.class,
                        p -> {
                            assertThat(p.getNeededFragments()).isEqualTo(6);
                            assertThat(p.getDataFragments()).isEqualTo(4);
                            assertThat(p.getParityFragments()).isEqualTo(2);
                            assertThat(p.getUsableNodes()).isZero();
                            assertThat(p.getFailureDomains()).isZero();
                        });
        assertThat(FragstateNative.nodeRunning()).as("the node itself runs; only placement is impossible").isTrue();
    }

    @Test
    void aTaskCreatingItsStorageToRestoreDoesNotWaitForWriteCapacity() throws IOException {
        FragstateCheckpointStorage storage = new FragstateCheckpointStorage(aloneInCluster("60 s"));
        long started = System.nanoTime();
        // What every task does in its constructor, before it restores.
        CheckpointStorageAccess taskView = storage.createCheckpointStorage(new JobID());
        long waitedMillis = (System.nanoTime() - started) / 1_000_000;

        assertThat(waitedMillis).as("a restore must not wait fragstate.storage-wait (60 s) for write capacity").isLessThan(30_000);
        // Flink's own file-system access, so that file merging and Flink's instanceof checks apply.
        assertThat(taskView).isInstanceOf(FsCheckpointStorageAccess.class);
    }
}
