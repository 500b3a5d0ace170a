package io.fragstate.traffic;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Set;
import org.junit.jupiter.api.Test;

class CliArgsTest {
    private static final Set<String> KNOWN = Set.of("brokers", "parallelism", "scale");
    private static final Set<String> FLAGS = Set.of("chaining");

    @Test
    void parsesValuesFlagsAndDefaults() {
        CliArgs a = CliArgs.parse(new String[] {"--brokers", "h:1", "--parallelism=3", "--chaining"}, KNOWN, FLAGS);
        assertThat(a.get("brokers", "x")).isEqualTo("h:1");
        assertThat(a.getInt("parallelism", 1)).isEqualTo(3);
        assertThat(a.flag("chaining")).isTrue();
        assertThat(a.getDouble("scale", 0.5)).isEqualTo(0.5);
        assertThat(a.has("scale")).isFalse();
    }

    @Test
    void clearErrors() {
        assertThatThrownBy(() -> CliArgs.parse(new String[] {"--nope", "1"}, KNOWN, FLAGS))
                .hasMessageContaining("unknown option --nope");
        assertThatThrownBy(() -> CliArgs.parse(new String[] {"--brokers"}, KNOWN, FLAGS))
                .hasMessageContaining("--brokers needs a value");
        assertThatThrownBy(() -> CliArgs.parse(new String[] {"--parallelism", "four"}, KNOWN, FLAGS).getInt("parallelism", 1))
                .hasMessageContaining("needs an integer");
        assertThatThrownBy(() -> CliArgs.parse(new String[] {"stray"}, KNOWN, FLAGS))
                .hasMessageContaining("unexpected argument");
    }
}
