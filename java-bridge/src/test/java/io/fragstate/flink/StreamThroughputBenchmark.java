/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

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

        Result(double w, double r4, double r1) {
            writeGBs = w;
            read4kGBs = r4;
            read1mGBs = r1;
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
        // warm-up, then the measured run
        run(Math.max(64, mib / 8), 1, false);
        Result r = run(mib, objects, true);
        System.out.printf(
                Locale.ROOT,
                "fragstate stream benchmark (%d MiB in %d objects, k=%s m=%s, embedded mesh): write %.2f GB/s,"
                        + " read 4 KiB %.2f GB/s, read 1 MiB %.2f GB/s%n",
                mib, objects, c.get(FragstateOptions.DATA_FRAGMENTS), c.get(FragstateOptions.PARITY_FRAGMENTS),
                r.writeGBs, r.read4kGBs, r.read1mGBs);
        FragstateNode.stop();
    }

    /** Writes {@code mib} MiB in 4 KiB writes over {@code objects} objects, reads it back twice. */
    public static Result run(int mib, int objects, boolean print) throws IOException {
        Path dir = new Path("fragstate://bench/" + System.nanoTime());
        FileSystem fs = dir.getFileSystem();
        byte[] block = new byte[4096];
        new Random(1).nextBytes(block);
        long perObject = (long) mib * 1024 * 1024 / objects;
        long bytes = perObject * objects;

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
            System.out.printf(Locale.ROOT, "  write %.2f GB/s, read(4 KiB) %.2f GB/s, read(1 MiB) %.2f GB/s%n", write, read4k, read1m);
        }
        return new Result(write, read4k, read1m);
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
