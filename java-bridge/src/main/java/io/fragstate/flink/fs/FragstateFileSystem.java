/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.fs;

import io.fragstate.flink.jni.FragstateNative;
import io.fragstate.flink.jni.PlacementException;
import io.fragstate.flink.node.FragstateNode;

import org.apache.flink.core.fs.BlockLocation;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemKind;
import org.apache.flink.core.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code fragstate://AUTHORITY/PATH} file system: every file is an object cut into
 * erasure-coded fragments held by the nodes of the mesh (see ARCHITECTURE.md for why checkpoints go
 * through a file system at all: Flink's metadata only records its own handle classes, and a
 * {@code FileStateHandle} with this scheme is one of them).
 *
 * <p>Semantics are those of an object store. Directories are implicit: a path is a directory
 * while some object lies below it, so {@link #mkdirs} stores nothing (it only refuses a path that
 * is, or lies below, an existing file) and an empty directory does not exist. Objects appear
 * atomically at {@code close()} of their output stream. {@link #rename} is not supported: Flink's
 * checkpoints, savepoints and state files are written in place and never renamed. The authority
 * names a namespace within the mesh (default {@code flink}); every authority shares this JVM's one
 * node.
 */
public class FragstateFileSystem extends FileSystem {

    public static final String SCHEME = "fragstate";

    /**
     * What Flink 1.20 asks every file system (an abstract method there, gone since 2.0: hence no
     * {@code @Override}, so that one jar serves both): an object store.
     */
    public FileSystemKind getKind() {
        return FileSystemKind.OBJECT_STORE;
    }

    static final int KIND_NONE = 0;
    static final int KIND_FILE = 1;
    static final int KIND_DIR = 2;

    private final URI uri;
    private final String authority;

    public FragstateFileSystem(String authority) {
        if (authority == null || authority.isEmpty()) {
            throw new IllegalArgumentException(
                    "fragstate:// paths need an authority (a namespace), e.g. fragstate://flink/checkpoints");
        }
        this.authority = authority;
        this.uri = URI.create(SCHEME + "://" + authority + "/");
    }

    // ------------------------------------------------------------------------
    //  Paths
    // ------------------------------------------------------------------------

    /**
     * The key the core stores {@code p} under: {@code fragstate://AUTHORITY/a/b} with no trailing
     * slash ({@code fragstate://AUTHORITY} for the root). Relative paths resolve against the root.
     */
    String key(Path p) throws IOException {
        if (p == null) {
            throw new NullPointerException("path");
        }
        URI u = p.toUri();
        if (u.getScheme() != null && !SCHEME.equalsIgnoreCase(u.getScheme())) {
            throw new IOException("fragstate: not a fragstate:// path: " + p);
        }
        String auth = u.getAuthority();
        if (auth != null && !auth.isEmpty() && !auth.equals(authority)) {
            throw new IOException(
                    "fragstate: path " + p + " belongs to authority '" + auth + "', not '" + authority + "'");
        }
        String path = u.getPath() == null ? "" : u.getPath();
        while (path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        if (!path.isEmpty() && !path.startsWith("/")) {
            path = "/" + path;
        }
        return SCHEME + "://" + authority + path;
    }

    private Path toPath(String name) {
        if (name.startsWith(SCHEME + ":")) {
            return new Path(name);
        }
        return new Path(SCHEME + "://" + authority + (name.startsWith("/") ? "" : "/") + name);
    }

    private boolean isRoot(String key) {
        return key.length() == SCHEME.length() + 3 + authority.length();
    }

    // ------------------------------------------------------------------------
    //  FileSystem
    // ------------------------------------------------------------------------

    @Override
    public Path getWorkingDirectory() {
        return new Path(uri);
    }

    @Override
    public Path getHomeDirectory() {
        return new Path(uri);
    }

    @Override
    public URI getUri() {
        return uri;
    }

    @Override
    public boolean isDistributedFS() {
        return true;
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        String key = key(f);
        if (isRoot(key)) {
            return new FragstateFileStatus(toPath(key), 0, 0, true);
        }
        long[] st = stat(key);
        switch ((int) st[0]) {
            case KIND_FILE:
                return new FragstateFileStatus(toPath(key), st[1], st[2], false);
            case KIND_DIR:
                return new FragstateFileStatus(toPath(key), 0, st[2], true);
            default:
                throw new FileNotFoundException("fragstate: no such file or directory: " + key);
        }
    }

    @Override
    public BlockLocation[] getFileBlockLocations(FileStatus file, long start, long len) {
        // Every node holds a fragment of everything; there is no locality to exploit.
        return new BlockLocation[] {new WholeObjectLocation(file.getLen())};
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        return open(f);
    }

    @Override
    public FSDataInputStream open(Path f) throws IOException {
        String key = key(f);
        FragstateNode.ensureStarted();
        long h = FragstateNative.openReader(key);
        try {
            long len = FragstateNative.readerLength(h);
            return new FragstateInputStream(key, h, len);
        } catch (IOException | RuntimeException e) {
            try {
                FragstateNative.closeReader(h);
            } catch (Throwable t) {
                e.addSuppressed(t);
            }
            throw e;
        }
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
        String key = key(f);
        FragstateNode.ensureStarted();
        Object[] r = FragstateNative.listStatus(key);
        String[] names = (String[]) r[0];
        long[] lengths = (long[]) r[1];
        long[] times = (long[]) r[2];
        boolean[] dirs = (boolean[]) r[3];
        if (names.length == 0) {
            if (isRoot(key)) {
                return new FileStatus[0];
            }
            long[] st = FragstateNative.stat(key);
            if (st[0] == KIND_FILE) {
                return new FileStatus[] {new FragstateFileStatus(toPath(key), st[1], st[2], false)};
            }
            if (st[0] == KIND_NONE) {
                throw new FileNotFoundException("fragstate: no such file or directory: " + key);
            }
        }
        List<FileStatus> out = new ArrayList<>(names.length);
        for (int i = 0; i < names.length; i++) {
            out.add(new FragstateFileStatus(toPath(names[i]), lengths[i], times[i], dirs[i]));
        }
        return out.toArray(new FileStatus[0]);
    }

    @Override
    public boolean exists(Path f) throws IOException {
        String key = key(f);
        return isRoot(key) || stat(key)[0] != KIND_NONE;
    }

    /**
     * Deletes a file, or a directory with everything below it. A non-recursive delete of an empty
     * directory removes it; of a non-empty one it fails; a path with nothing there returns false.
     *
     * <p>The JobManager deletes each subsumed checkpoint's directory this way, once per
     * checkpoint. The native delete answers it from the directory index: a bounded number of
     * nodes in a cluster of any size (rust-core/NETWORK.md, "directory index").
     */
    @Override
    public boolean delete(Path f, boolean recursive) throws IOException {
        String key = key(f);
        FragstateNode.ensureStarted();
        if (isRoot(key) && !recursive) {
            return false;
        }
        return FragstateNative.delete(key, recursive) > 0;
    }

    /**
     * Directories are implicit: stores nothing, refuses a path that is or lies below a file. Each
     * ancestor is checked with {@link FragstateNative#statFile} (a bounded lookup: the JobManager
     * makes a directory for every checkpoint); the directory is then made known to the directory
     * index ({@link FragstateNative#mkdirs}).
     */
    @Override
    public boolean mkdirs(Path f) throws IOException {
        String key = key(f);
        String root = SCHEME + "://" + authority;
        FragstateNode.ensureStarted();
        for (String k = key; k.length() > root.length(); k = k.substring(0, k.lastIndexOf('/'))) {
            if (FragstateNative.statFile(k)[0] == KIND_FILE) {
                throw new IOException(
                        "fragstate: cannot create directory " + key + ": " + k + " is a file");
            }
        }
        FragstateNative.mkdirs(key);
        return true;
    }

    @Override
    public FSDataOutputStream create(Path f, WriteMode overwriteMode) throws IOException {
        String key = key(f);
        if (isRoot(key)) {
            throw new IOException("fragstate: cannot write the root " + key);
        }
        FragstateNode.ensureStarted();
        long h;
        try {
            h = FragstateNative.createWriter(key, overwriteMode == WriteMode.OVERWRITE);
        } catch (PlacementException e) {
            throw FragstateNode.explainPlacementFailure(e);
        }
        return new FragstateOutputStream(key, h);
    }

    /** Not supported: Flink's checkpoint and savepoint code never renames. */
    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        throw new IOException(
                "fragstate:// does not support rename (objects are written in place; Flink's"
                        + " checkpoints and savepoints do not rename): " + src + " -> " + dst);
    }

    private long[] stat(String key) throws IOException {
        FragstateNode.ensureStarted();
        return FragstateNative.stat(key);
    }

    /** The whole object as one block with no preferred host. */
    private static final class WholeObjectLocation implements BlockLocation {
        private final long length;

        WholeObjectLocation(long length) {
            this.length = length;
        }

        @Override
        public String[] getHosts() {
            return new String[0];
        }

        @Override
        public long getOffset() {
            return 0;
        }

        @Override
        public long getLength() {
            return length;
        }

        @Override
        public int compareTo(BlockLocation o) {
            return Long.compare(getOffset(), o.getOffset());
        }
    }
}
