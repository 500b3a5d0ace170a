/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.jni;

import io.fragstate.flink.fs.FragstateFileSystem;
import io.fragstate.flink.node.FragstateNode;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Misuse of the JNI boundary raises Java exceptions and never takes the JVM down: every test
 * ends with a working round trip through the same node.
 */
class JniMisuseTest {

    private static final String BASE = "fragstate://jni-misuse/";

    @BeforeAll
    static void node() throws IOException {
        FragstateNode.ensureStarted();
    }

    private static String path() {
        return BASE + UUID.randomUUID();
    }

    private static long committed(String path, int size) throws IOException {
        long w = FragstateNative.createWriter(path, false);
        ByteBuffer b = ByteBuffer.allocateDirect(Math.max(size, 1));
        FragstateNative.write(w, b, size);
        FragstateNative.closeWriter(w);
        return size;
    }

    /** The node still works. */
    private static void stillAlive() throws IOException {
        String p = path();
        committed(p, 5000);
        long r = FragstateNative.openReader(p);
        try {
            assertThat(FragstateNative.readerLength(r)).isEqualTo(5000);
        } finally {
            FragstateNative.closeReader(r);
        }
        assertThat(FragstateNative.nodeRunning()).isTrue();
    }

    @Test
    void unknownAndZeroHandles() throws IOException {
        ByteBuffer b = ByteBuffer.allocateDirect(16);
        for (long h : new long[] {0, -1, 123_456_789L, Long.MAX_VALUE}) {
            assertThatThrownBy(() -> FragstateNative.write(h, b, 1)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> FragstateNative.writeArray(h, new byte[1], 0, 1)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> FragstateNative.closeWriter(h)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> FragstateNative.read(h, b, 1)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> FragstateNative.readArray(h, new byte[1], 0, 1)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> FragstateNative.seek(h, 0)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> FragstateNative.position(h)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> FragstateNative.readerLength(h)).isInstanceOf(IOException.class);
            assertThatThrownBy(() -> FragstateNative.closeReader(h)).isInstanceOf(IOException.class);
        }
        stillAlive();
    }

    @Test
    void closedHandles() throws IOException {
        String p = path();
        long w = FragstateNative.createWriter(p, false);
        FragstateNative.closeWriter(w);
        assertThatThrownBy(() -> FragstateNative.closeWriter(w))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("closed or unknown");
        assertThatThrownBy(() -> FragstateNative.write(w, ByteBuffer.allocateDirect(1), 1)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> FragstateNative.abortWriter(w)).isInstanceOf(IOException.class);

        long r = FragstateNative.openReader(p);
        FragstateNative.closeReader(r);
        assertThatThrownBy(() -> FragstateNative.closeReader(r)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> FragstateNative.read(r, ByteBuffer.allocateDirect(1), 1)).isInstanceOf(IOException.class);

        long a = FragstateNative.createWriter(path(), false);
        FragstateNative.abortWriter(a);
        assertThatThrownBy(() -> FragstateNative.closeWriter(a)).isInstanceOf(IOException.class);
        stillAlive();
    }

    @Test
    void nullsAndBadArguments() throws IOException {
        assertThatThrownBy(() -> FragstateNative.createWriter(null, false)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> FragstateNative.openReader(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> FragstateNative.stat(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> FragstateNative.statFile(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> FragstateNative.listStatus(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> FragstateNative.delete(null, true)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> FragstateNative.mkdirs(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> FragstateNative.startNode(null)).isInstanceOf(NullPointerException.class);

        long w = FragstateNative.createWriter(path(), false);
        try {
            assertThatThrownBy(() -> FragstateNative.write(w, null, 1)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> FragstateNative.writeArray(w, null, 0, 1)).isInstanceOf(NullPointerException.class);
            // a heap buffer has no address: must be refused, not dereferenced
            assertThatThrownBy(() -> FragstateNative.write(w, ByteBuffer.allocate(16), 16))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> FragstateNative.write(w, ByteBuffer.allocateDirect(16), 17))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> FragstateNative.write(w, ByteBuffer.allocateDirect(16), -1))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> FragstateNative.writeArray(w, new byte[4], 2, 3))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> FragstateNative.writeArray(w, new byte[4], -1, 1))
                    .isInstanceOf(IllegalArgumentException.class);
            // arguments are checked before the writer is touched: it still takes bytes
            FragstateNative.writeArray(w, new byte[4], 0, 4);
        } finally {
            FragstateNative.abortWriter(w);
        }

        String p = path();
        committed(p, 100);
        long r = FragstateNative.openReader(p);
        try {
            assertThatThrownBy(() -> FragstateNative.read(r, ByteBuffer.allocate(16), 16))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> FragstateNative.readArray(r, new byte[4], 3, 2))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> FragstateNative.seek(r, -5)).isInstanceOf(IllegalArgumentException.class);
        } finally {
            FragstateNative.closeReader(r);
        }
        stillAlive();
    }

    @Test
    void documentedExceptionTypes() throws IOException {
        String p = path();
        assertThatThrownBy(() -> FragstateNative.openReader(p)).isInstanceOf(FileNotFoundException.class);
        committed(p, 10);
        assertThatThrownBy(() -> FragstateNative.createWriter(p, false)).isInstanceOf(FileAlreadyExistsException.class);
        assertThat(FragstateNative.stat(p)[0]).isEqualTo(1);
        assertThat(FragstateNative.stat(p)[1]).isEqualTo(10);
        assertThat(FragstateNative.stat(p + "-none")[0]).isZero();
        assertThat(FragstateNative.statFile(p)).containsExactly(FragstateNative.stat(p));
        assertThat(FragstateNative.statFile(p + "-none")[0]).isZero();
        assertThatThrownBy(() -> FragstateNative.startNode("{\"dataFragments\":5}")).isInstanceOf(IOException.class);
        stillAlive();
    }

    @Test
    void concurrentCloseOfOneReader() throws Exception {
        String p = path();
        committed(p, 2 * 1024 * 1024);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            for (int round = 0; round < 20; round++) {
                long r = FragstateNative.openReader(p);
                CountDownLatch go = new CountDownLatch(1);
                List<Future<Boolean>> closes = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    closes.add(
                            pool.submit(
                                    () -> {
                                        go.await();
                                        try {
                                            FragstateNative.closeReader(r);
                                            return true;
                                        } catch (IOException e) {
                                            return false;
                                        }
                                    }));
                }
                go.countDown();
                int wins = 0;
                for (Future<Boolean> f : closes) {
                    wins += f.get(30, TimeUnit.SECONDS) ? 1 : 0;
                }
                assertThat(wins).as("exactly one close wins").isEqualTo(1);
            }
        } finally {
            pool.shutdownNow();
        }
        stillAlive();
    }

    @Test
    void closeWhileReadingAndWriting() throws Exception {
        String p = path();
        committed(p, 8 * 1024 * 1024);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 10; round++) {
                long r = FragstateNative.openReader(p);
                Future<?> reader =
                        pool.submit(
                                () -> {
                                    ByteBuffer b = ByteBuffer.allocateDirect(64 * 1024);
                                    try {
                                        while (FragstateNative.read(r, b, b.capacity()) > 0) {
                                            FragstateNative.seek(r, 0);
                                        }
                                    } catch (IOException expected) {
                                        // the close won the race
                                    }
                                    return null;
                                });
                Thread.sleep(2);
                try {
                    FragstateNative.closeReader(r);
                } catch (IOException ignored) {
                    // the reader thread may not have started; then this close is the only one
                }
                reader.get(30, TimeUnit.SECONDS);

                long w = FragstateNative.createWriter(path(), false);
                Future<?> writer =
                        pool.submit(
                                () -> {
                                    ByteBuffer b = ByteBuffer.allocateDirect(256 * 1024);
                                    try {
                                        for (int i = 0; i < 200; i++) {
                                            FragstateNative.write(w, b, b.capacity());
                                        }
                                    } catch (IOException expected) {
                                        // closed underneath
                                    }
                                    return null;
                                });
                Thread.sleep(2);
                try {
                    FragstateNative.abortWriter(w);
                } catch (IOException ignored) {
                    // already finished or freed
                }
                writer.get(30, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        stillAlive();
    }

    /** Stopping the node fails its open handles; the next use starts a fresh node. */
    @Test
    void stopWithOpenHandles() throws IOException {
        String p = path();
        committed(p, 1000);
        long r = FragstateNative.openReader(p);
        long w = FragstateNative.createWriter(path(), false);
        FragstateNode.stop();
        assertThat(FragstateNative.nodeRunning()).isFalse();
        assertThatThrownBy(() -> FragstateNative.read(r, ByteBuffer.allocateDirect(10), 10)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> FragstateNative.write(w, ByteBuffer.allocateDirect(10), 10)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> FragstateNative.closeWriter(w)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> FragstateNative.openReader(p)).isInstanceOf(IOException.class);
        // freed with the node
        assertThatThrownBy(() -> FragstateNative.closeReader(r))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("closed or unknown");
        FragstateNode.ensureStarted();
        stillAlive();
    }

    @Test
    void streamsSurviveMisuse() throws IOException {
        FragstateFileSystem fs = new FragstateFileSystem("jni-misuse");
        org.apache.flink.core.fs.Path p = new org.apache.flink.core.fs.Path(BASE + "stream-" + UUID.randomUUID());
        var out = fs.create(p, org.apache.flink.core.fs.FileSystem.WriteMode.NO_OVERWRITE);
        assertThatThrownBy(() -> out.write(null, 0, 1)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> out.write(new byte[2], 1, 2)).isInstanceOf(IndexOutOfBoundsException.class);
        out.write(new byte[] {1, 2, 3});
        out.close();
        out.close();
        var in = fs.open(p);
        assertThatThrownBy(() -> in.read(null, 0, 1)).isInstanceOf(NullPointerException.class);
        in.close();
        in.close();
        assertThatThrownBy(in::read).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> in.seek(0)).isInstanceOf(IOException.class);
        stillAlive();
    }
}
