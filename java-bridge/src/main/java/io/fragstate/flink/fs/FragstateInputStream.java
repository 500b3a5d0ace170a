/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.fs;

import io.fragstate.flink.jni.DirectBuffers;
import io.fragstate.flink.jni.FragstateNative;

import org.apache.flink.core.fs.FSDataInputStream;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * Reads one {@code fragstate://} object through a 1 MiB direct read buffer. A seek inside the
 * buffered window only moves the buffer's position; any other seek goes to the Rust reader,
 * which then decodes only the stripes from there on. Reads at least as large as the buffer skip
 * it and land in the caller's array directly.
 */
final class FragstateInputStream extends FSDataInputStream {

    private final String path;
    private final long length;
    private long handle;
    private ByteBuffer buf;
    /** Object position of {@code buf}'s first byte; buf's limit marks the valid bytes. */
    private long bufStart;
    private boolean closed;

    FragstateInputStream(String path, long handle, long length) {
        this.path = path;
        this.handle = handle;
        this.length = length;
        this.buf = DirectBuffers.take();
        buf.limit(0);
    }

    @Override
    public synchronized void seek(long desired) throws IOException {
        ensureOpen();
        if (desired < 0) {
            throw new EOFException("fragstate: negative seek " + desired + " in " + path);
        }
        if (desired > length) {
            throw new EOFException(
                    "fragstate: seek to " + desired + " beyond the end of " + path + " (" + length + " bytes)");
        }
        if (desired >= bufStart && desired <= bufStart + buf.limit()) {
            buf.position((int) (desired - bufStart));
            return;
        }
        FragstateNative.seek(handle, desired);
        bufStart = desired;
        buf.clear().limit(0);
    }

    @Override
    public synchronized long getPos() throws IOException {
        ensureOpen();
        return bufStart + buf.position();
    }

    @Override
    public synchronized int read() throws IOException {
        ensureOpen();
        if (!buf.hasRemaining() && !fill()) {
            return -1;
        }
        return buf.get() & 0xff;
    }

    @Override
    public synchronized int read(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, b.length); // a null b throws NullPointerException
        ensureOpen();
        if (len == 0) {
            return 0;
        }
        int n = 0;
        if (buf.hasRemaining()) {
            n = Math.min(len, buf.remaining());
            buf.get(b, off, n);
            if (n == len) {
                return n;
            }
            off += n;
            len -= n;
        }
        // buffer is drained here
        if (len >= buf.capacity()) {
            long at = bufStart + buf.position();
            int r = FragstateNative.readArray(handle, b, off, len);
            if (r > 0) {
                bufStart = at + r;
                buf.clear().limit(0);
                return n + r;
            }
            return n > 0 ? n : -1;
        }
        if (!fill()) {
            return n > 0 ? n : -1;
        }
        int m = Math.min(len, buf.remaining());
        buf.get(b, off, m);
        return n + m;
    }

    @Override
    public synchronized long skip(long n) throws IOException {
        ensureOpen();
        if (n <= 0) {
            return 0;
        }
        long pos = bufStart + buf.position();
        long to = Math.min(length, pos + n);
        seek(to);
        return to - pos;
    }

    /** The buffered bytes: what a read returns without crossing JNI. */
    @Override
    public synchronized int available() throws IOException {
        ensureOpen();
        return buf.remaining();
    }

    @Override
    public synchronized void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        long h = handle;
        handle = 0;
        ByteBuffer b = buf;
        buf = null;
        try {
            FragstateNative.closeReader(h);
        } finally {
            DirectBuffers.give(b);
        }
    }

    /** Refills the drained buffer from the reader; false at the end of the object. */
    private boolean fill() throws IOException {
        long at = bufStart + buf.position();
        buf.clear();
        int r = FragstateNative.read(handle, buf, buf.capacity());
        bufStart = at;
        if (r <= 0) {
            buf.limit(0);
            return false;
        }
        buf.position(0).limit(r);
        return true;
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new IOException("fragstate: stream for " + path + " is closed");
        }
    }
}
