package io.fragstate.examples.statebench;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

/**
 * The value a key holds after its {@code count}-th event: {@code length} pseudo-random
 * (incompressible) bytes from {@link SplittableRandom} seeded by (key, count). The job stores it
 * and, on the key's next event, compares what the state backend gives back with a fresh
 * computation, word by word, without building a second array.
 */
final class BenchValues {
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private BenchValues() {}

    /** SplitMix64's finalizer: a bijection on longs that mixes every input bit into every output bit. */
    static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long seed(long key, long count) {
        return mix64(key * 0x9E3779B97F4A7C15L + mix64(count ^ 0x5DEECE66DL));
    }

    /** The value of {@code key} after its {@code count}-th event. */
    static byte[] value(long key, long count, int length) {
        byte[] out = new byte[length];
        SplittableRandom r = new SplittableRandom(seed(key, count));
        int words = length >>> 3;
        for (int w = 0; w < words; w++) {
            LONGS.set(out, w << 3, r.nextLong());
        }
        if ((length & 7) != 0) {
            long tail = r.nextLong();
            for (int i = words << 3; i < length; i++, tail >>>= 8) {
                out[i] = (byte) tail;
            }
        }
        return out;
    }

    /** True when {@code stored} is exactly {@code value(key, count, stored.length)} and has {@code length} bytes. */
    static boolean matches(long key, long count, byte[] stored, int length) {
        if (stored == null || stored.length != length) {
            return false;
        }
        SplittableRandom r = new SplittableRandom(seed(key, count));
        int words = length >>> 3;
        for (int w = 0; w < words; w++) {
            if ((long) LONGS.get(stored, w << 3) != r.nextLong()) {
                return false;
            }
        }
        if ((length & 7) != 0) {
            long tail = r.nextLong();
            for (int i = words << 3; i < length; i++, tail >>>= 8) {
                if (stored[i] != (byte) tail) {
                    return false;
                }
            }
        }
        return true;
    }
}
