/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/** Cluster key files for tests, written as {@code fragstate keygen} does: owner-only. */
public final class ClusterKeys {

    private ClusterKeys() {}

    /** Writes a fixed cluster key to {@code dir/cluster.key} with mode 0600 and returns its path. */
    public static Path write(Path dir) throws IOException {
        Path key = dir.resolve("cluster.key");
        Files.writeString(key, "/key/swarm/psk/1.0.0/\n/base16/\n" + "5a".repeat(32) + "\n");
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
        return key;
    }
}
