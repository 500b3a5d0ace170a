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

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A cluster-mode node that finds fewer storage nodes than a job's {@code k + m}: creating the
 * job's checkpoint storage (what the JobManager does when it sets up the job, and every task)
 * fails with an error naming the options and the counts, instead of letting the job run with
 * every checkpoint failing. The passing side runs on a real cluster in {@code integration-tests}.
 */
class ClusterModePlacementTest {

    @TempDir Path dir;

    @AfterEach
    void backToTheDefaultNode() {
        FragstateNode.stop();
        FragstateNode.configure(FragstateSettings.fromConfig(null));
    }

    @Test
    void tooFewStorageNodesFailTheJobNamingTheOptions() throws IOException {
        Path key = dir.resolve("cluster.key");
        Files.writeString(key, "/key/swarm/psk/1.0.0/\n/base16/\n" + "5a".repeat(32) + "\n");
        Configuration c = new Configuration();
        c.setString("fragstate.mode", "cluster");
        c.setString("fragstate.cluster-key-file", key.toString());
        c.setString("fragstate.listen", "/ip4/127.0.0.1/tcp/0");
        // nothing listens there: this node stays alone
        c.setString("fragstate.bootstrap", "/ip4/127.0.0.1/tcp/1");
        c.setString("fragstate.storage-wait", "300 ms");
        FragstateNode.stop(); // an embedded node of an earlier test class would ignore the settings
        FragstateCheckpointStorage storage = new FragstateCheckpointStorage(c);

        assertThatThrownBy(() -> storage.createCheckpointStorage(new JobID()))
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
}
