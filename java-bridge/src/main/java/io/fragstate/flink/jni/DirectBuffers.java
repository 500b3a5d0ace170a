/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.jni;

import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small pool of equally sized direct buffers for the streams. Direct memory is only returned
 * when a buffer is garbage collected, so allocating one per stream (Flink opens a stream per
 * state file, often thousands per checkpoint) would churn {@code -XX:MaxDirectMemorySize}.
 */
public final class DirectBuffers {

    public static final int CHUNK = 1024 * 1024;
    private static final int MAX_POOLED = 32;

    private static final ConcurrentLinkedQueue<ByteBuffer> POOL = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger POOLED = new AtomicInteger();

    private DirectBuffers() {}

    public static ByteBuffer take() {
        ByteBuffer b = POOL.poll();
        if (b == null) {
            return ByteBuffer.allocateDirect(CHUNK);
        }
        POOLED.decrementAndGet();
        b.clear();
        return b;
    }

    public static void give(ByteBuffer b) {
        if (b != null && POOLED.incrementAndGet() <= MAX_POOLED) {
            b.clear();
            POOL.offer(b);
        } else if (b != null) {
            POOLED.decrementAndGet();
        }
    }
}
