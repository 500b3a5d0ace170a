/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.jni;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The JNI binding to the Rust core ({@code libfragstate.so}, crate {@code fragstate-jni},
 * {@code rust-core/jni}). Load the library with {@link NativeLibrary#load} before the first call.
 *
 * <p>Contract, enforced on the Rust side ({@code rust-core/jni/src}):
 *
 * <ul>
 *   <li>One node per JVM: {@link #startNode} starts it (and its tokio runtime); calling it again
 *       while a node runs is a no-op if the config is identical and an {@link IOException}
 *       otherwise. {@link #stopNode} stops it; every open handle then fails.
 *   <li>Errors never crash the JVM: every Rust error or panic becomes a Java exception carrying
 *       the message. A missing object raises {@link java.io.FileNotFoundException}, an existing
 *       one on a no-overwrite create {@link java.nio.file.FileAlreadyExistsException}, a bad
 *       argument or config value {@link IllegalArgumentException}, too few live storage nodes or
 *       failure domains for a new object {@link PlacementException} (with the counts as fields),
 *       everything else {@link IOException}. A null argument raises {@link NullPointerException}.
 *   <li>Handles are opaque positive longs. A closed, unknown or zero handle raises {@link
 *       IOException} ("handle N is closed or unknown"); closing twice or closing concurrently
 *       with a read or write is safe (one of the calls wins, the others raise).
 *   <li>Data crosses in large chunks: {@code ByteBuffer} arguments must be direct buffers; the
 *       {@code byte[]} variants copy. Blocking calls run on the calling Java thread.
 * </ul>
 */
public final class FragstateNative {

    private FragstateNative() {}

    /**
     * Starts this JVM's node. {@code configJson} is a flat JSON object; every key is optional:
     * {@code mode} ("embedded" = in-process mesh, "cluster" = networked node), {@code
     * dataFragments}, {@code parityFragments}, {@code cellSize} (bytes), {@code compression}
     * ("none" or "zstd:LEVEL"), {@code localMeshNodes}, {@code storeDir} (string or null = memory),
     * {@code storeMemory} (bytes), {@code listen}, {@code bootstrap} (array of multiaddrs), {@code
     * clusterKeyFile}, {@code insecureNoClusterKey} (boolean), {@code failureDomain}, {@code
     * membership} ("mesh" or "swim"), {@code readAhead} (stripes), {@code scrubRate} (bytes per second, 0 = no background scrub), {@code
     * logLevel} ("error" … "trace").
     */
    public static native void startNode(String configJson) throws IOException;

    /**
     * The bounds of every numeric {@link #startNode} setting as a JSON object whose entries are
     * {@code {"min": N, "max": N}}: {@code dataFragments}, {@code parityFragments}, {@code
     * totalFragments} (k + m), {@code cellSize} (bytes), {@code zstdLevel}, {@code localMeshNodes}
     * (an embedded mesh needs at least k + m besides), {@code readAhead} (stripes), {@code
     * storeMemory} (bytes), {@code scrubRate} (bytes per second). Needs no running node.
     */
    public static native String limits();

    public static native void stopNode();

    public static native boolean nodeRunning();

    /**
     * Node and client counters as a JSON object (fragments and bytes held, bytes written and read,
     * reconstructions, live peers, …); keys are camelCase at every level ({@code liveNodes},
     * {@code client.bytesWritten}, {@code network.objectsDegraded}; {@code network} is null in
     * embedded mode).
     */
    public static native String nodeStats() throws IOException;

    /**
     * Returns once a new object could be placed: {@code k + m} live storage nodes besides this
     * node, one per failure domain. After {@code timeoutMillis} (0: check once) it raises a
     * {@link PlacementException} with the live node and failure-domain counts.
     */
    public static native void awaitPlacement(long timeoutMillis) throws IOException;

    /**
     * Starts writing {@code path}; with {@code overwrite == false} an existing object is an error,
     * and a {@link PlacementException} when its fragments cannot be placed.
     */
    public static native long createWriter(String path, boolean overwrite) throws IOException;

    /** Appends bytes {@code [0, len)} of a direct buffer. */
    public static native void write(long writer, ByteBuffer direct, int len) throws IOException;

    public static native void writeArray(long writer, byte[] bytes, int off, int len) throws IOException;

    /** Commits: returns once every fragment is acknowledged and the manifest is published. Frees the handle. */
    public static native void closeWriter(long writer) throws IOException;

    /** Discards the write and its fragments. Frees the handle. Never throws for a live handle. */
    public static native void abortWriter(long writer) throws IOException;

    public static native long openReader(String path) throws IOException;

    public static native long readerLength(long reader) throws IOException;

    /** Reads up to {@code len} bytes into {@code [0, len)} of a direct buffer; -1 at the end. */
    public static native int read(long reader, ByteBuffer direct, int len) throws IOException;

    public static native int readArray(long reader, byte[] bytes, int off, int len) throws IOException;

    public static native void seek(long reader, long position) throws IOException;

    public static native long position(long reader) throws IOException;

    public static native void closeReader(long reader) throws IOException;

    /**
     * {@code {kind, length, modificationTimeMillis}}: kind 0 = nothing there, 1 = object (file),
     * 2 = directory (an implicit prefix of at least one object).
     */
    public static native long[] stat(String path) throws IOException;

    /**
     * {@link #stat}, but only whether {@code path} is a file (kind 0 or 1), looked up as a create
     * looks its path up: in one round to a bounded number of nodes in a cluster of any size,
     * where {@code stat} of a path that is no file asks every node (rust-core/NETWORK.md,
     * "Manifest lookups by path").
     */
    public static native long[] statFile(String path) throws IOException;

    /**
     * Direct children of directory {@code dir}: {@code Object[] {String[] names, long[] lengths,
     * long[] modificationTimes, boolean[] isDirectory}}. Names are full paths.
     */
    public static native Object[] listStatus(String dir) throws IOException;

    /**
     * Deletes {@code path} (and everything below it if recursive); returns the objects removed. A
     * non-recursive delete of a directory removes it if it is empty and fails with an {@link
     * IOException} if it is not.
     */
    public static native long delete(String path, boolean recursive) throws IOException;

    /**
     * Makes directory {@code dir} known to the directory index (rust-core/NETWORK.md, "directory
     * index"), so that later questions about it (is a file there? is it empty?) ask a bounded
     * number of nodes. Directories are implicit; nothing else is stored.
     */
    public static native void mkdirs(String dir) throws IOException;
}
