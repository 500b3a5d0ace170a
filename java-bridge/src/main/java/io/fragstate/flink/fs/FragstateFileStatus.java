/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.fs;

import io.fragstate.flink.jni.DirectBuffers;

import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.Path;

/** Status of an object or an implicit directory of {@code fragstate://}. */
final class FragstateFileStatus implements FileStatus {

    private final Path path;
    private final long length;
    private final long modified;
    private final boolean dir;

    FragstateFileStatus(Path path, long length, long modified, boolean dir) {
        this.path = path;
        this.length = dir ? 0 : length;
        this.modified = modified;
        this.dir = dir;
    }

    @Override
    public long getLen() {
        return length;
    }

    @Override
    public long getBlockSize() {
        return DirectBuffers.CHUNK;
    }

    /** One object is stored once, as k + m fragments on distinct nodes; it has no replicas. */
    @Override
    public short getReplication() {
        return 1;
    }

    @Override
    public long getModificationTime() {
        return modified;
    }

    @Override
    public long getAccessTime() {
        return 0;
    }

    @Override
    public boolean isDir() {
        return dir;
    }

    @Override
    public Path getPath() {
        return path;
    }

    @Override
    public String toString() {
        return (dir ? "dir " : "file ") + path + (dir ? "" : " (" + length + " bytes)");
    }
}
