/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import io.fragstate.flink.config.FragstateSettings;
import io.fragstate.flink.fs.FragstateFileSystem;
import io.fragstate.flink.node.FragstateNode;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemFactory;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.URI;

/**
 * Registers {@code fragstate://} with Flink (listed in {@code META-INF/services}). {@link
 * #configure} checks the options at JobManager/TaskManager start, so a bad value stops the
 * process there. In cluster mode it also starts the process's node there: a TaskManager then
 * stores fragments from the moment it joins, not from its first checkpoint, and a job's first
 * checkpoint finds every node. Other callers (the {@code flink} CLI also initializes file
 * systems) start a node only on first use, so a short-lived client never becomes a storage node.
 */
public class FragstateFileSystemFactory implements FileSystemFactory {

    private static final Logger LOG = LoggerFactory.getLogger(FragstateFileSystemFactory.class);

    // Where Flink initializes file systems at process start (ClusterEntrypoint#configureFileSystems,
    // TaskManagerRunner#runTaskManagerProcessSecurely; YARN and Kubernetes runners call the latter).
    private static final String JOB_MANAGER_ENTRY_POINTS = "org.apache.flink.runtime.entrypoint.";
    private static final String TASK_MANAGER_RUNNER = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner";

    @Override
    public String getScheme() {
        return FragstateFileSystem.SCHEME;
    }

    @Override
    public void configure(Configuration config) {
        FragstateSettings settings = FragstateSettings.fromConfig(config);
        if (settings.mode() == FragstateOptions.Mode.EMBEDDED && !config.toMap().isEmpty()) {
            // FileSystem.initialize runs in JobManager/TaskManager processes (a MiniCluster never
            // calls it): there every process would get a mesh of its own.
            LOG.warn(
                    "{} = embedded in a Flink process: this JVM keeps fragments in its own in-process"
                            + " mesh, which other JobManager/TaskManager processes cannot see (state"
                            + " files written by a TaskManager are then unreachable from the"
                            + " JobManager and lost with the TaskManager). Use it for single-JVM runs"
                            + " only; set {} = cluster for a real cluster.",
                    FragstateOptions.MODE.key(),
                    FragstateOptions.MODE.key());
        }
        FragstateNode.configure(settings);
        if (settings.mode() == FragstateOptions.Mode.CLUSTER && calledAtClusterProcessStart()) {
            try {
                FragstateNode.ensureStarted();
            } catch (IOException e) {
                throw new IllegalConfigurationException(
                        "fragstate: the node of this Flink process did not start: " + e.getMessage(), e);
            }
        }
    }

    /** Whether a JobManager entry point or a TaskManager runner is initializing file systems. */
    private static boolean calledAtClusterProcessStart() {
        return StackWalker.getInstance()
                .walk(frames -> frames.map(StackWalker.StackFrame::getClassName)
                        .anyMatch(c -> c.startsWith(JOB_MANAGER_ENTRY_POINTS) || c.equals(TASK_MANAGER_RUNNER)));
    }

    @Override
    public FileSystem create(URI fsUri) throws IOException {
        String authority = fsUri.getAuthority();
        if (authority == null || authority.isEmpty()) {
            throw new IOException(
                    "fragstate: '" + fsUri + "' has no authority; write fragstate://NAMESPACE/path,"
                            + " e.g. fragstate://flink/checkpoints");
        }
        return new FragstateFileSystem(authority);
    }
}
