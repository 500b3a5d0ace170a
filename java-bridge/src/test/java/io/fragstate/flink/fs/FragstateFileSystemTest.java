/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.fs;

import io.fragstate.flink.jni.DirectBuffers;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystem.WriteMode;
import org.apache.flink.core.fs.Path;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.file.FileAlreadyExistsException;
import java.util.Arrays;
import java.util.Random;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Streams and file-system operations of {@code fragstate://} beyond Flink's behaviour suite. */
class FragstateFileSystemTest {

    private FileSystem fs;
    private Path dir;

    @BeforeEach
    void setUp() throws IOException {
        dir = new Path("fragstate://fs-test/" + UUID.randomUUID());
        fs = dir.getFileSystem();
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** Writes like Flink's checkpoint streams: through a 4 KiB buffer. */
    private void write(Path p, byte[] data) throws IOException {
        try (FSDataOutputStream out = fs.create(p, WriteMode.NO_OVERWRITE)) {
            for (int off = 0; off < data.length; off += 4096) {
                out.write(data, off, Math.min(4096, data.length - off));
            }
            assertThat(out.getPos()).isEqualTo(data.length);
        }
    }

    private byte[] readAll(Path p) throws IOException {
        try (FSDataInputStream in = fs.open(p)) {
            byte[] out = new byte[(int) fs.getFileStatus(p).getLen()];
            int off = 0;
            while (off < out.length) {
                int r = in.read(out, off, Math.min(7000, out.length - off));
                assertThat(r).isPositive();
                off += r;
            }
            assertThat(in.read()).isEqualTo(-1);
            assertThat(in.read(new byte[10], 0, 10)).isEqualTo(-1);
            return out;
        }
    }

    @Test
    void roundTripsAtChunkBoundaries() throws IOException {
        int chunk = DirectBuffers.CHUNK;
        for (int n : new int[] {0, 1, 4095, 4096, chunk - 1, chunk, chunk + 1, 5 * chunk + 12345}) {
            Path p = new Path(dir, "size-" + n);
            byte[] data = random(n, n);
            write(p, data);
            assertThat(fs.getFileStatus(p).getLen()).as("length of %s", n).isEqualTo(n);
            assertThat(fs.getFileStatus(p).isDir()).isFalse();
            assertThat(readAll(p)).as("content of %s", n).isEqualTo(data);
        }
    }

    @Test
    void singleByteWritesAndReads() throws IOException {
        Path p = new Path(dir, "bytes");
        byte[] data = random(10_000, 7);
        try (FSDataOutputStream out = fs.create(p, WriteMode.NO_OVERWRITE)) {
            for (byte b : data) {
                out.write(b);
            }
        }
        try (FSDataInputStream in = fs.open(p)) {
            for (int i = 0; i < data.length; i++) {
                assertThat(in.getPos()).isEqualTo(i);
                assertThat(in.read()).isEqualTo(data[i] & 0xff);
            }
            assertThat(in.read()).isEqualTo(-1);
        }
    }

    @Test
    void largeReadsBypassTheBuffer() throws IOException {
        Path p = new Path(dir, "large");
        byte[] data = random(3 * DirectBuffers.CHUNK + 17, 3);
        write(p, data);
        try (FSDataInputStream in = fs.open(p)) {
            byte[] head = new byte[10];
            assertThat(in.read(head)).isEqualTo(10);
            byte[] big = new byte[2 * DirectBuffers.CHUNK];
            int off = 0;
            while (off < big.length) {
                off += in.read(big, off, big.length - off);
            }
            assertThat(in.getPos()).isEqualTo(10 + big.length);
            assertThat(head).isEqualTo(Arrays.copyOfRange(data, 0, 10));
            assertThat(big).isEqualTo(Arrays.copyOfRange(data, 10, 10 + big.length));
        }
    }

    @Test
    void seeksAnywhere() throws IOException {
        Path p = new Path(dir, "seek");
        byte[] data = random(4 * DirectBuffers.CHUNK + 999, 11);
        write(p, data);
        Random rnd = new Random(42);
        try (FSDataInputStream in = fs.open(p)) {
            for (int i = 0; i < 200; i++) {
                int pos = rnd.nextInt(data.length);
                // half of the seeks stay near the last position (inside the read buffer)
                if (i % 2 == 1) {
                    pos = (int) Math.min(data.length - 1, in.getPos() + rnd.nextInt(5000));
                }
                in.seek(pos);
                assertThat(in.getPos()).isEqualTo(pos);
                int n = Math.min(data.length - pos, 1 + rnd.nextInt(20_000));
                byte[] got = new byte[n];
                int off = 0;
                while (off < n) {
                    off += in.read(got, off, n - off);
                }
                assertThat(got).as("%d bytes at %d", n, pos).isEqualTo(Arrays.copyOfRange(data, pos, pos + n));
            }
            in.seek(data.length);
            assertThat(in.read()).isEqualTo(-1);
            in.seek(0);
            assertThat(in.read()).isEqualTo(data[0] & 0xff);
            assertThatThrownBy(() -> in.seek(data.length + 1L)).isInstanceOf(EOFException.class);
            assertThatThrownBy(() -> in.seek(-1)).isInstanceOf(EOFException.class);
            assertThat(in.skip(10)).isEqualTo(10);
            assertThat(in.getPos()).isEqualTo(11);
        }
    }

    @Test
    void writeModes() throws IOException {
        Path p = new Path(dir, "modes");
        write(p, new byte[] {1, 2, 3});
        assertThatThrownBy(() -> fs.create(p, WriteMode.NO_OVERWRITE).close())
                .isInstanceOf(FileAlreadyExistsException.class);
        try (FSDataOutputStream out = fs.create(p, WriteMode.OVERWRITE)) {
            out.write(new byte[] {9, 9});
        }
        assertThat(readAll(p)).containsExactly(9, 9);
    }

    @Test
    void objectsAppearOnlyAtClose() throws IOException {
        Path p = new Path(dir, "pending");
        FSDataOutputStream out = fs.create(p, WriteMode.NO_OVERWRITE);
        out.write(random(3 * DirectBuffers.CHUNK, 5));
        out.flush();
        out.sync();
        assertThat(fs.exists(p)).isFalse();
        out.close();
        assertThat(fs.exists(p)).isTrue();
        out.close(); // idempotent
        assertThatThrownBy(() -> out.write(1)).isInstanceOf(IOException.class);
    }

    @Test
    void discardedWritesLeaveNothing() throws IOException {
        Path p = new Path(dir, "discarded");
        FragstateOutputStream out = (FragstateOutputStream) fs.create(p, WriteMode.NO_OVERWRITE);
        out.write(random(2 * DirectBuffers.CHUNK + 5, 6));
        out.discard();
        assertThat(fs.exists(p)).isFalse();
        assertThatThrownBy(() -> out.write(1)).isInstanceOf(IOException.class);
    }

    @Test
    void listsDirectChildren() throws IOException {
        write(new Path(dir, "a"), new byte[10]);
        write(new Path(dir, "b"), new byte[20]);
        write(new Path(dir, "sub/c"), new byte[30]);
        write(new Path(dir, "sub/deeper/d"), new byte[40]);
        FileStatus[] st = fs.listStatus(dir);
        assertThat(st).extracting(s -> s.getPath().getName()).containsExactlyInAnyOrder("a", "b", "sub");
        for (FileStatus s : st) {
            assertThat(s.getPath().toUri().getScheme()).isEqualTo("fragstate");
            assertThat(s.getPath().toUri().getAuthority()).isEqualTo("fs-test");
            switch (s.getPath().getName()) {
                case "a":
                    assertThat(s.getLen()).isEqualTo(10);
                    assertThat(s.isDir()).isFalse();
                    break;
                case "sub":
                    assertThat(s.isDir()).isTrue();
                    break;
                default:
            }
        }
        assertThat(fs.getFileStatus(new Path(dir, "sub")).isDir()).isTrue();
        assertThat(fs.listStatus(new Path(dir, "a"))).hasSize(1);
        assertThatThrownBy(() -> fs.listStatus(new Path(dir, "nothing"))).isInstanceOf(FileNotFoundException.class);
        assertThatThrownBy(() -> fs.getFileStatus(new Path(dir, "nothing"))).isInstanceOf(FileNotFoundException.class);

        assertThatThrownBy(() -> fs.delete(new Path(dir, "sub"), false)).isInstanceOf(IOException.class);
        assertThat(fs.delete(new Path(dir, "sub"), true)).isTrue();
        assertThat(fs.exists(new Path(dir, "sub/deeper/d"))).isFalse();
        assertThat(fs.delete(new Path(dir, "a"), false)).isTrue();
        assertThat(fs.delete(new Path(dir, "a"), false)).isFalse();
        assertThat(fs.listStatus(dir)).extracting(s -> s.getPath().getName()).containsExactly("b");
    }

    @Test
    void pathsAndIdentity() throws IOException {
        assertThat(fs.getUri()).isEqualTo(URI.create("fragstate://fs-test/"));
        assertThat(fs.isDistributedFS()).isTrue();
        assertThat(fs.getWorkingDirectory().toUri().getScheme()).isEqualTo("fragstate");
        assertThat(fs.getFileStatus(new Path("fragstate://fs-test/")).isDir()).isTrue();
        assertThat(fs.exists(new Path("fragstate://fs-test/"))).isTrue();
        FragstateFileSystem f = (FragstateFileSystem) fs;
        assertThat(f.key(new Path("fragstate://fs-test/a/b/"))).isEqualTo("fragstate://fs-test/a/b");
        assertThat(f.key(new Path("fragstate://fs-test/"))).isEqualTo("fragstate://fs-test");
        assertThat(f.key(new Path("/x"))).isEqualTo("fragstate://fs-test/x");
        assertThatThrownBy(() -> f.key(new Path("fragstate://other/x"))).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> f.key(new Path("file:///x"))).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> new Path("fragstate:///no-authority").getFileSystem())
                .isInstanceOf(IOException.class)
                .hasMessageContaining("authority");
    }

    @Test
    void renameIsRefused() throws IOException {
        Path p = new Path(dir, "r");
        write(p, new byte[] {1});
        assertThatThrownBy(() -> fs.rename(p, new Path(dir, "s")))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("rename");
        assertThat(fs.exists(p)).isTrue();
    }

    @Test
    void concurrentStreams() throws Exception {
        int threads = 4;
        Thread[] ts = new Thread[threads];
        Throwable[] errors = new Throwable[threads];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            ts[t] =
                    new Thread(
                            () -> {
                                try {
                                    for (int i = 0; i < 5; i++) {
                                        Path p = new Path(dir, "c-" + id + "-" + i);
                                        byte[] data = random(300_000 + id * 1000 + i, id * 100L + i);
                                        write(p, data);
                                        assertThat(readAll(p)).isEqualTo(data);
                                    }
                                } catch (Throwable e) {
                                    errors[id] = e;
                                }
                            });
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        for (Throwable e : errors) {
            if (e != null) {
                throw new AssertionError(e);
            }
        }
        assertThat(fs.listStatus(dir)).hasSize(threads * 5);
    }
}
