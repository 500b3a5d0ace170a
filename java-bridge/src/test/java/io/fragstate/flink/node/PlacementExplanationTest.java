/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.node;

import io.fragstate.flink.jni.PlacementException;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A placement failure gets the names of the options that decide it and keeps its counts. The
 * exception is built here as the native side builds it (its public constructor); the real one is
 * raised by a lone cluster-mode node in {@code ClusterModePlacementTest}.
 */
class PlacementExplanationTest {

    @Test
    void namesTheSettingsAndKeepsTheCounts() {
        PlacementException e =
                new PlacementException(
                        "cannot place 8 fragments (k=6 + m=2): only 6 usable storage nodes in 6 failure domains are live",
                        8,
                        6,
                        2,
                        6,
                        6);
        PlacementException explained = FragstateNode.explainPlacementFailure(e);
        assertThat(explained.getMessage())
                .startsWith(e.getMessage())
                .contains("fragstate.data-fragments (k) + fragstate.parity-fragments (m)")
                .contains("fragstate.failure-domain")
                .contains("fragstate.bootstrap")
                .contains("fragstate.cluster-key-file");
        assertThat(explained).hasCause(e);
        assertThat(explained.getNeededFragments()).isEqualTo(8);
        assertThat(explained.getDataFragments()).isEqualTo(6);
        assertThat(explained.getParityFragments()).isEqualTo(2);
        assertThat(explained.getUsableNodes()).isEqualTo(6);
        assertThat(explained.getFailureDomains()).isEqualTo(6);
    }
}
