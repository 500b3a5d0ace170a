/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.fs;

import io.fragstate.flink.jni.DirectBuffers;
import io.fragstate.flink.jni.FragstateNative;

import org.apache.flink.core.fs.FSDataOutputStream;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * Writes one {@code fragstate://} object. Flink writes through a 4 KiB buffer; bytes collect in a
 * 1 MiB direct buffer and cross JNI a chunk at a time. {@link #close()} commits (it returns once
 * every fragment is acknowledged); a failed write or commit aborts the object, so nothing
 * partial is ever published. {@link #flush()} and {@link #sync()} publish nothing: as in object
 * stores, an object becomes visible and durable at {@code close()}.
 *
 * <p>Flink may close a stream from another thread while a task writes to it (cancellation closes
 * the task's streams); the methods are synchronized so that the buffer is never torn.
 */
final class FragstateOutputStream extends FSDataOutputStream {

    private final String path;
    private long handle;
    private ByteBuffer buf;
    private long pos;
    private boolean closed;

    FragstateOutputStream(String path, long handle) {
        this.path = path;
        this.handle = handle;
    }

    @Override
    public synchronized long getPos() throws IOException {
        return pos;
    }

    @Override
    public synchronized void write(int b) throws IOException {
        ensureOpen();
        if (buf == null) {
            buf = DirectBuffers.take();
        }
        buf.put((byte) b);
        pos++;
        if (!buf.hasRemaining()) {
            drain();
        }
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, b.length); // a null b throws NullPointerException
        ensureOpen();
        if (buf == null) {
            buf = DirectBuffers.take();
        }
        while (len > 0) {
            int n = Math.min(len, buf.remaining());
            buf.put(b, off, n);
            off += n;
            len -= n;
            pos += n;
            if (!buf.hasRemaining()) {
                drain();
            }
        }
    }

    /** Publishes nothing; see the class comment. */
    @Override
    public synchronized void flush() throws IOException {
        ensureOpen();
    }

    /** Durability comes with {@link #close()}; see the class comment. */
    @Override
    public synchronized void sync() throws IOException {
        ensureOpen();
    }

    @Override
    public synchronized void close() throws IOException {
        if (closed) {
            return;
        }
        long h = takeHandle();
        try {
            if (buf != null && buf.position() > 0) {
                FragstateNative.write(h, buf, buf.position());
            }
            FragstateNative.closeWriter(h);
        } catch (IOException | RuntimeException e) {
            abortQuietly(h);
            throw asIOException("committing", e);
        } finally {
            release();
        }
    }

    /** Discards the object; used when the caller gives up on a write. */
    synchronized void discard() {
        if (!closed) {
            abandon();
        }
    }

    private void drain() throws IOException {
        try {
            FragstateNative.write(handle, buf, buf.position());
        } catch (IOException | RuntimeException e) {
            abandon();
            throw asIOException("writing", e);
        }
        buf.clear();
    }

    /** Closes the stream and hands its handle over to the caller, who must commit or abort it. */
    private long takeHandle() {
        closed = true;
        long h = handle;
        handle = 0;
        return h;
    }

    /** Closes the stream without publishing: the object is aborted, the buffer returned. */
    private void abandon() {
        abortQuietly(takeHandle());
        release();
    }

    /**
     * Aborts after a failure. A commit that failed may already have freed its handle, so the
     * abort's own "closed or unknown" error is expected and dropped; the first error is the one
     * that matters.
     */
    private static void abortQuietly(long h) {
        if (h == 0) {
            return;
        }
        try {
            FragstateNative.abortWriter(h);
        } catch (Throwable ignored) {
            // see above
        }
    }

    private IOException asIOException(String what, Exception e) {
        if (e instanceof IOException) {
            return (IOException) e;
        }
        return new IOException("fragstate: " + what + " " + path + " failed: " + e.getMessage(), e);
    }

    private void release() {
        ByteBuffer b = buf;
        buf = null;
        DirectBuffers.give(b);
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new IOException("fragstate: stream for " + path + " is closed");
        }
    }
}
