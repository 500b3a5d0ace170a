package io.fragstate.generator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fragstate.traffic.Geo;
import io.fragstate.traffic.VehicleEvent;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrafficSimulatorTest {
    private static List<VehicleEvent> all(GeneratorConfig c) {
        TrafficSimulator sim = new TrafficSimulator(c);
        List<VehicleEvent> out = new ArrayList<>();
        while (sim.hasNext()) {
            out.addAll(sim.nextSecond());
        }
        return out;
    }

    @Test
    void deterministicForASeed() {
        assertThat(all(GeneratorConfig.defaults(7, 0.05, 30))).isEqualTo(all(GeneratorConfig.defaults(7, 0.05, 30)));
        assertThat(all(GeneratorConfig.defaults(7, 0.05, 30))).isNotEqualTo(all(GeneratorConfig.defaults(8, 0.05, 30)));
    }

    @Test
    void activeVehiclesFollowProfileTimesScale() {
        GeneratorConfig c = GeneratorConfig.defaults(1, 0.1, 20);
        TrafficSimulator sim = new TrafficSimulator(c);
        for (int s = 0; s < 20; s++) {
            int expected = (int) Math.round(RateProfile.builtIn().count(s) * 0.1);
            List<VehicleEvent> ev = sim.nextSecond();
            assertThat(ev).hasSize(expected);
            final long base = GeneratorConfig.DEFAULT_START_EPOCH_MS + s * 1000L;
            // event time = start + second + phase, never the wall clock
            assertThat(ev).allSatisfy(e -> assertThat(e.ts - base).isBetween(0L, 999L));
        }
        assertThat(sim.hasNext()).isFalse();
    }

    @Test
    void platesAreUniqueGermanStyleAndSpeedsPlausible() {
        List<VehicleEvent> events = all(GeneratorConfig.defaults(3, 0.1, 60));
        Map<String, VehicleEvent> last = new HashMap<>();
        for (VehicleEvent e : events) {
            assertThat(e.lp).matches("[A-Z]{1,3}-[A-Z]{1,2} [1-9][0-9]{0,3}");
            VehicleEvent prev = last.put(e.lp, e);
            if (prev != null) {
                assertThat(e.ts - prev.ts).isEqualTo(1000L);
                double kmh = Geo.distanceMeters(prev.lat, prev.lon, e.lat, e.lon) * 3.6;
                assertThat(kmh).isLessThanOrEqualTo(80.0); // straight line <= driven path <= 79 km/h
            }
        }
        assertThat(last).hasSizeGreaterThan(30);
    }

    @Test
    void registryLeavesEveryTenthVehicleUnregistered() {
        GeneratorConfig c = GeneratorConfig.defaults(3, 0.1, 10);
        int fleet = (int) all(c).stream().map(e -> e.lp).distinct().count();
        assertThat(TrafficSimulator.registryFor(c).size()).isEqualTo(fleet - fleet / 10);
    }

    @Test
    void readsProfileAndGraphFiles(@TempDir Path tmp) throws Exception {
        Path profile = tmp.resolve("p.csv");
        Files.writeString(profile, "second|count\n0|5\n1|7\n");
        RateProfile p = RateProfile.read(profile);
        assertThat(p.length()).isEqualTo(2);
        assertThat(p.count(3)).isEqualTo(7); // wraps around
        Files.writeString(profile, "second|count\n0|5\n2|7\n");
        assertThatThrownBy(() -> RateProfile.read(profile)).hasMessageContaining(":3:");

        String graph = "{\"nodes\":[{\"id\":\"a\",\"latitude\":52.5,\"longitude\":13.4},"
                + "{\"id\":\"b\",\"latitude\":52.51,\"longitude\":13.4}],\"edges\":[{\"source\":\"a\",\"target\":\"b\"}]}";
        RoadGraph g = RoadGraph.read(new ByteArrayInputStream(graph.getBytes(StandardCharsets.UTF_8)), "g");
        assertThat(g.size()).isEqualTo(2);
        assertThat(g.neighbours(0)).containsExactly(1);
        String bad = graph.replace("\"target\":\"b\"", "\"target\":\"zz\"");
        assertThatThrownBy(() -> RoadGraph.read(new ByteArrayInputStream(bad.getBytes(StandardCharsets.UTF_8)), "g"))
                .hasMessageContaining("unknown node");
    }

    @Test
    void builtInGraphIsTheBerlinMitteNetwork() {
        RoadGraph g = RoadGraph.builtIn();
        assertThat(g.size()).isEqualTo(31);
        assertThat(g.routableNodes()).isNotEmpty();
    }
}
