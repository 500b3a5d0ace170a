/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemFactory;

import java.io.IOException;
import java.net.URI;

/**
 * Registers {@code fragstate://} with Flink (listed in {@code META-INF/services}). {@link
 * #configure} checks the options at JobManager/TaskManager start, so a bad value stops the
 * process there; the node itself starts on first use.
 */
public class FragstateFileSystemFactory implements FileSystemFactory {

    @Override
    public String getScheme() {
        return FragstateFileSystem.SCHEME;
    }

    @Override
    public void configure(Configuration config) {
        FragstateNode.configure(FragstateSettings.fromConfig(config));
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
