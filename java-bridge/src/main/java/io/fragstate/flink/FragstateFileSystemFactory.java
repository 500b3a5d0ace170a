/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemFactory;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.URI;

/**
 * Registers {@code fragstate://} with Flink (listed in {@code META-INF/services}). {@link
 * #configure} checks the options at JobManager/TaskManager start, so a bad value stops the
 * process there; the node itself starts on first use.
 */
public class FragstateFileSystemFactory implements FileSystemFactory {

    private static final Logger LOG = LoggerFactory.getLogger(FragstateFileSystemFactory.class);

    @Override
    public String getScheme() {
        return FragstateFileSystem.SCHEME;
    }

    @Override
    public void configure(Configuration config) {
        FragstateSettings settings = FragstateSettings.fromConfig(config);
        if (settings.mode() == FragstateSettings.Mode.EMBEDDED && !config.toMap().isEmpty()) {
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
