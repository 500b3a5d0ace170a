package io.fragstate.examples.statebench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class BenchSettingsTest {
    @Test
    void defaults() {
        BenchSettings s = BenchSettings.parse(new String[] {"--output", "/tmp/out"});
        assertThat(s.stateMb()).isEqualTo(300);
        assertThat(s.valueBytes()).isEqualTo(4096);
        assertThat(s.keys()).isEqualTo(300 * 256);
        assertThat(s.fillPerSecond()).isEqualTo(50_000);
        assertThat(s.steadyPerSecond()).isEqualTo(2_000);
        assertThat(s.events()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void keysAreStateOverValueSize() {
        BenchSettings s = BenchSettings.parse(new String[] {"--state-mb", "3", "--value-bytes", "1000", "--events", "9",
                "--output", "/tmp/out"});
        assertThat(s.keys()).isEqualTo(3 * 1048576 / 1000);
        assertThat(s.events()).isEqualTo(9);
    }

    @Test
    void rejectsNonsense() {
        assertThatThrownBy(() -> BenchSettings.parse(new String[] {})).hasMessageContaining("--output");
        assertThatThrownBy(() -> BenchSettings.parse(new String[] {"--output", "x", "--value-bytes", "0"}))
                .hasMessageContaining("--value-bytes");
        assertThatThrownBy(() -> BenchSettings.parse(new String[] {"--output", "x", "--rate", "-1"}))
                .hasMessageContaining("--rate");
        assertThatThrownBy(() -> BenchSettings.parse(new String[] {"--output", "x", "--keys", "1"}))
                .hasMessageContaining("unknown option --keys");
    }
}
