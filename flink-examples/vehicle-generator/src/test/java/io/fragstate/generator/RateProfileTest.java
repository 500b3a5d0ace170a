package io.fragstate.generator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RateProfileTest {
    @Test
    void theEmbeddedDaedalusProfileIsTheOriginal() throws Exception {
        RateProfile p = RateProfile.daedalus();
        assertThat(p.length()).isEqualTo(25_000);
        assertThat(p.count(0)).isEqualTo(1986);
        assertThat(p.count(3)).isEqualTo(1957);
        int max = 0;
        for (int s = 0; s < p.length(); s++) {
            max = Math.max(max, p.count(s));
        }
        assertThat(max).isEqualTo(99_989);
        assertThat(RateProfile.read(Path.of(RateProfile.DAEDALUS)).count(7000)).isEqualTo(75_420);
    }

    @Test
    void compressionAveragesEachGroupOfSecondsAndKeepsTheRest(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("p.csv");
        Files.writeString(file, "second|count\n0|10\n1|20\n2|31\n3|0\n4|7\n");
        RateProfile p = RateProfile.read(file).compressed(2);
        assertThat(p.length()).isEqualTo(3);
        assertThat(p.count(0)).isEqualTo(15);
        assertThat(p.count(1)).isEqualTo(16); // 15.5 rounds up
        assertThat(p.count(2)).isEqualTo(7); // the last second alone
        assertThat(RateProfile.read(file).compressed(1).count(2)).isEqualTo(31);
    }

    @Test
    void aCompressionOutsideOneToTheLengthIsRefusedNamingTheRange(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("p.csv");
        Files.writeString(file, "0|1\n1|2\n");
        RateProfile p = RateProfile.read(file);
        assertThatThrownBy(() -> p.compressed(0)).hasMessageContaining("between 1 and the profile's length 2, got 0");
        assertThatThrownBy(() -> p.compressed(3)).hasMessageContaining("got 3");
    }
}
