/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.node;

import io.fragstate.flink.FragstateFileSystemFactory;
import io.fragstate.flink.FragstateOptions;
import io.fragstate.flink.config.FragstateSettings;
import io.fragstate.flink.jni.FragstateNative;
import io.fragstate.flink.jni.NativeLibrary;
import io.fragstate.flink.jni.PlacementException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;

/**
 * This JVM's fragstate node: one per process, stopped by a shutdown hook. It starts with the
 * process in a cluster-mode JobManager or TaskManager ({@link FragstateFileSystemFactory}), when
 * a job's checkpoint storage is created ({@link #awaitPlacement}), or else on the first {@code
 * fragstate://} operation, with the most recent settings handed to {@link #configure}.
 *
 * <p>Settings come from whichever Flink entry point saw a configuration: the file system factory
 * ({@code FileSystem.initialize} at JobManager/TaskManager start; a MiniCluster never calls it, so
 * there it sees an empty configuration), the state backend factory and the checkpoint storage
 * factory. The latest call before the node starts wins; a later, different configuration is
 * logged and ignored, since a running node cannot change its coding parameters or its mesh.
 */
public final class FragstateNode {

    private static final Logger LOG = LoggerFactory.getLogger(FragstateNode.class);

    private static FragstateSettings configured;
    private static FragstateSettings running;
    private static volatile boolean started;
    private static boolean hookInstalled;

    private FragstateNode() {}

    /** Records the settings the node will start with (or logs a mismatch if it already runs). */
    public static synchronized void configure(FragstateSettings settings) {
        if (started) {
            if (!settings.toNodeJson().equals(running.toNodeJson())) {
                LOG.warn(
                        "fragstate node already runs with {}; ignoring the later configuration {}"
                                + " (one node per JVM)",
                        running,
                        settings);
            }
            return;
        }
        configured = settings;
    }

    /** Starts the node if it is not running yet. */
    public static void ensureStarted() throws IOException {
        if (started) {
            return;
        }
        synchronized (FragstateNode.class) {
            if (started) {
                return;
            }
            NativeLibrary.load();
            FragstateSettings s = configured != null ? configured : FragstateSettings.fromConfig(null);
            String json = s.toStartJson();
            LOG.info("Starting fragstate node: {}", json);
            try {
                FragstateNative.startNode(json);
            } catch (IllegalArgumentException e) {
                throw new IOException("fragstate node rejected its configuration " + json + ": " + e.getMessage(), e);
            }
            running = s;
            started = true;
            if (!hookInstalled) {
                hookInstalled = true;
                Runtime.getRuntime()
                        .addShutdownHook(new Thread(FragstateNode::stopQuietly, "fragstate-node-shutdown"));
            }
        }
    }

    /**
     * Starts the node and waits until it could place the fragments of a new object (see {@link
     * FragstateOptions#STORAGE_WAIT}); the error names the options that decide it.
     */
    public static void awaitPlacement() throws IOException {
        ensureStarted();
        FragstateSettings s = running();
        if (s == null) {
            throw new IOException("fragstate node stopped while checking placement");
        }
        try {
            FragstateNative.awaitPlacement(s.storageWait().toMillis());
        } catch (IOException e) {
            String why = e instanceof PlacementException p ? explainPlacementFailure(p).getMessage() : e.getMessage();
            throw new IOException(
                    "fragstate: checkpoints of this job cannot be stored (waited "
                            + s.storageWait().toMillis()
                            + " ms, "
                            + FragstateOptions.STORAGE_WAIT.key()
                            + "): "
                            + why,
                    e);
        }
    }

    /**
     * A write that cannot place its k + m fragments (too few live storage nodes or failure
     * domains) gets the names of the settings that decide it, so that a misconfigured cluster
     * shows in the log what to change. The result keeps the counts of {@code e} (and has it as its
     * cause).
     */
    public static PlacementException explainPlacementFailure(PlacementException e) {
        FragstateSettings running = running();
        String domain = running == null || running.failureDomain() == null ? "" : " (here: " + running.failureDomain() + ")";
        PlacementException explained = new PlacementException(
                e.getMessage()
                        + " — every object needs "
                        + FragstateOptions.DATA_FRAGMENTS.key()
                        + " (k) + "
                        + FragstateOptions.PARITY_FRAGMENTS.key()
                        + " (m) live storage nodes besides the writer, each in its own "
                        + FragstateOptions.FAILURE_DOMAIN.key()
                        + domain
                        + ": lower k or m, start more storage nodes (fragstate node), or check "
                        + FragstateOptions.BOOTSTRAP.key()
                        + " and "
                        + FragstateOptions.CLUSTER_KEY_FILE.key(),
                e.getNeededFragments(),
                e.getDataFragments(),
                e.getParityFragments(),
                e.getUsableNodes(),
                e.getFailureDomains());
        explained.initCause(e);
        return explained;
    }

    /** The settings of the running node, or null. */
    static synchronized FragstateSettings running() {
        return running;
    }

    /** Stops the node; every open stream then fails. The next operation starts it again. */
    public static synchronized void stop() {
        if (!started) {
            return;
        }
        started = false;
        running = null;
        FragstateNative.stopNode();
    }

    private static void stopQuietly() {
        try {
            stop();
        } catch (Throwable t) {
            // the JVM is going down; nothing to report to
        }
    }

    /** The node's counters as JSON (see {@link FragstateNative#nodeStats}). */
    static String stats() throws IOException {
        ensureStarted();
        return FragstateNative.nodeStats();
    }
}
