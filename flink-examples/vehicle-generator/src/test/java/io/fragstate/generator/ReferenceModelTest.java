package io.fragstate.generator;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ReferenceModelTest {
    @Test
    void expectedOutputIsDeterministicAndPlausible() throws Exception {
        GeneratorConfig c = GeneratorConfig.defaults(42, 0.1, 60);
        List<String> expected = ReferenceModel.expectedNotifications(c);
        assertThat(expected).isEqualTo(ReferenceModel.expectedNotifications(GeneratorConfig.defaults(42, 0.1, 60)));
        assertThat(expected).isSorted().hasSizeGreaterThan(100);

        ObjectMapper m = new ObjectMapper();
        Set<String> keys = new HashSet<>();
        Set<String> types = new HashSet<>();
        for (String line : expected) {
            JsonNode n = m.readTree(line);
            long end = n.get("windowEnd").asLong();
            assertThat((end - 1_000) % 10_000).isZero(); // offset 1 s
            assertThat(n.get("speedKmh").asInt()).isBetween(0, 80);
            assertThat(n.get("reports").asInt()).isBetween(1, 10);
            assertThat(keys.add(n.get("lp").asText() + "@" + end)).as("one result per vehicle and window").isTrue();
            types.add(n.get("vehicleType").asText());
        }
        assertThat(types).contains("car", "unregistered");
    }
}
