package io.fragstate.examples.statebench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.zip.Deflater;
import org.junit.jupiter.api.Test;

/** The stored value is a deterministic, incompressible function of (key, count) and the check sees every byte. */
class BenchValuesTest {
    @Test
    void deterministicAndSensitiveToKeyAndCount() {
        byte[] v = BenchValues.value(7, 3, 4096);
        assertThat(BenchValues.value(7, 3, 4096)).isEqualTo(v);
        assertThat(BenchValues.value(7, 4, 4096)).isNotEqualTo(v);
        assertThat(BenchValues.value(8, 3, 4096)).isNotEqualTo(v);
        assertThat(BenchValues.value(3, 7, 4096)).isNotEqualTo(v);
        assertThat(BenchValues.value(7, 3, 100)).containsExactly(java.util.Arrays.copyOf(v, 100));
    }

    @Test
    void matchesOnlyTheExactValue() {
        for (int len : new int[] {1, 7, 8, 9, 4096, 4099}) {
            byte[] v = BenchValues.value(123_456, 42, len);
            assertThat(BenchValues.matches(123_456, 42, v, len)).as("len %d", len).isTrue();
            assertThat(BenchValues.matches(123_456, 41, v, len)).isFalse();
            assertThat(BenchValues.matches(123_457, 42, v, len)).isFalse();
            assertThat(BenchValues.matches(123_456, 42, v, len + 1)).isFalse();
            assertThat(BenchValues.matches(123_456, 42, null, len)).isFalse();
            for (int i : new int[] {0, len / 2, len - 1}) {
                byte[] flipped = v.clone();
                flipped[i] ^= 1;
                assertThat(BenchValues.matches(123_456, 42, flipped, len)).as("len %d, byte %d flipped", len, i).isFalse();
            }
        }
    }

    @Test
    void incompressible() {
        byte[] v = BenchValues.value(1, 1, 4096);
        Deflater d = new Deflater(Deflater.BEST_COMPRESSION);
        d.setInput(v);
        d.finish();
        byte[] out = new byte[8192];
        int size = d.deflate(out);
        d.end();
        assertThat(size).isGreaterThanOrEqualTo(4096);
    }
}
