/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import io.fragstate.flink.config.FragstateSettings;
import io.fragstate.flink.jni.FragstateNative;
import io.fragstate.flink.node.FragstateNode;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

import java.io.IOException;
import java.util.Arrays;
import java.util.Locale;
import java.util.Random;

/**
 * Throughput of Flink's stream path through JNI: {@code FSDataOutputStream} with Flink-sized
 * writes (its checkpoint streams write through a 4 KiB buffer) and {@code FSDataInputStream}
 * reads, on the in-process mesh (no network). Run:
 *
 * <pre>
 * mvn -pl java-bridge -Dfragstate.skipCargo=true test-compile exec:java \
 *   -Dexec.classpathScope=test -Dexec.mainClass=io.fragstate.flink.StreamThroughputBenchmark \
 *   [-Dbench.mib=1024] [-Dbench.objects=4] [-Dbench.k=4 -Dbench.m=2 -Dbench.nodes=6]
 * </pre>
 */
public final class StreamThroughputBenchmark {

    public static final class Result {
        public final double writeGBs;
        public final double read4kGBs;
        public final double read1mGBs;
        /** The same bytes through {@code FragstateNative.write} directly (no stream): the core's own rate. */
        public final double nativeWriteGBs;

        Result(double w, double r4, double r1, double nw) {
            writeGBs = w;
            read4kGBs = r4;
            read1mGBs = r1;
            nativeWriteGBs = nw;
        }
    }

    public static void main(String[] args) throws Exception {
        int mib = Integer.getInteger("bench.mib", 1024);
        int objects = Integer.getInteger("bench.objects", 4);
        Configuration c = new Configuration();
        c.set(FragstateOptions.DATA_FRAGMENTS, Integer.getInteger("bench.k", 4));
        c.set(FragstateOptions.PARITY_FRAGMENTS, Integer.getInteger("bench.m", 2));
        c.set(FragstateOptions.LOCAL_MESH_NODES, Integer.getInteger("bench.nodes", 6));
        FragstateNode.configure(FragstateSettings.fromConfig(c));
        // The first run pays for first-touch page faults of the in-memory stores (a cold node);
        // the second finds that memory recycled, as a running node does once old checkpoints
        // are discarded. Both are printed.
        Result cold = run(mib, objects, false);
        Result r = run(mib, objects, false);
        System.out.printf(
                Locale.ROOT,
                "fragstate stream benchmark (%d MiB in %d objects, 4 KiB writes, k=%s m=%s, embedded mesh):%n"
                        + "  warm: stream write %.2f GB/s, read (4 KiB reads) %.2f GB/s, read (1 MiB reads) %.2f GB/s;"
                        + " core alone (FragstateNative.write, 4 MiB calls) %.2f GB/s%n"
                        + "  cold stores: stream write %.2f GB/s, core alone %.2f GB/s%n",
                mib, objects, c.get(FragstateOptions.DATA_FRAGMENTS), c.get(FragstateOptions.PARITY_FRAGMENTS),
                r.writeGBs, r.read4kGBs, r.read1mGBs, r.nativeWriteGBs, cold.writeGBs, cold.nativeWriteGBs);
        FragstateNode.stop();
    }

    /** Writes {@code mib} MiB in 4 KiB writes over {@code objects} objects, reads it back twice. */
    public static Result run(int mib, int objects, boolean print) throws IOException {
        Path dir = new Path("fragstate://bench/" + System.nanoTime());
        FileSystem fs = dir.getFileSystem();
        FragstateNode.ensureStarted();
        byte[] block = new byte[4096];
        new Random(1).nextBytes(block);
        long perObject = (long) mib * 1024 * 1024 / objects;
        long bytes = perObject * objects;

        // the core alone first, so that both runs find the stores' memory already mapped
        java.nio.ByteBuffer direct = java.nio.ByteBuffer.allocateDirect(4 * 1024 * 1024);
        long t1 = System.nanoTime();
        for (int o = 0; o < objects; o++) {
            long w = FragstateNative.createWriter("fragstate://bench/native/" + System.nanoTime() + "-" + o, false);
            for (long n = 0; n < perObject; n += direct.capacity()) {
                FragstateNative.write(w, direct, (int) Math.min(direct.capacity(), perObject - n));
            }
            FragstateNative.closeWriter(w);
        }
        double nativeWrite = bytes / ((System.nanoTime() - t1) / 1e9) / 1e9;
        FragstateNative.delete("fragstate://bench/native", true);

        long t0 = System.nanoTime();
        for (int o = 0; o < objects; o++) {
            try (FSDataOutputStream out = fs.create(new Path(dir, "o" + o), FileSystem.WriteMode.NO_OVERWRITE)) {
                for (long n = 0; n < perObject; n += block.length) {
                    block[0] = (byte) n;
                    out.write(block, 0, (int) Math.min(block.length, perObject - n));
                }
            }
        }
        double write = bytes / ((System.nanoTime() - t0) / 1e9) / 1e9;

        double read4k = readAll(fs, dir, objects, bytes, 4096);
        double read1m = readAll(fs, dir, objects, bytes, 1024 * 1024);
        fs.delete(dir, true);

        if (print) {
            System.out.printf(
                    Locale.ROOT,
                    "  stream write %.2f GB/s, read(4 KiB) %.2f GB/s, read(1 MiB) %.2f GB/s; native write (4 MiB calls, no stream) %.2f GB/s%n",
                    write, read4k, read1m, nativeWrite);
        }
        return new Result(write, read4k, read1m, nativeWrite);
    }

    private static double readAll(FileSystem fs, Path dir, int objects, long bytes, int chunk) throws IOException {
        byte[] buf = new byte[chunk];
        long total = 0;
        long t0 = System.nanoTime();
        for (int o = 0; o < objects; o++) {
            try (FSDataInputStream in = fs.open(new Path(dir, "o" + o))) {
                int r;
                while ((r = in.read(buf, 0, buf.length)) > 0) {
                    total += r;
                }
            }
        }
        double gbs = total / ((System.nanoTime() - t0) / 1e9) / 1e9;
        if (total != bytes) {
            throw new IOException("read " + total + " bytes, wrote " + bytes + " " + Arrays.toString(new long[] {total, bytes}));
        }
        return gbs;
    }
}
