package io.fragstate.examples.traffic;

import static org.assertj.core.api.Assertions.assertThat;

import io.fragstate.traffic.Notification;
import io.fragstate.traffic.TrafficLogic;
import io.fragstate.traffic.VehicleEvent;
import io.fragstate.traffic.VehicleRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs filter, windows and enrichment in a local Flink environment on a tiny bounded input. */
class PipelineLocalTest {
    @Test
    void windowsFilterAndEnrichment(@TempDir Path tmp) throws Exception {
        Path registry = tmp.resolve("registry.csv");
        Files.writeString(registry, "lp,type\nB-AA 1,bus\n");
        long t0 = 1_700_000_000_000L; // window boundaries at ...1_000 (offset 1 s)
        List<VehicleEvent> input = new ArrayList<>();
        for (int s = 0; s < 25; s++) {
            // B-AA 1 drives north through the point of interest, ~11 m/s
            input.add(new VehicleEvent("B-AA 1", TrafficLogic.POI_LAT + s * 0.0001, TrafficLogic.POI_LON, t0 + s * 1000 + 100));
            // B-BB 2 is unregistered and stands still
            input.add(new VehicleEvent("B-BB 2", TrafficLogic.POI_LAT, TrafficLogic.POI_LON + 0.001, t0 + s * 1000 + 700));
            // far away: filtered out
            input.add(new VehicleEvent("B-CC 3", 48.137, 11.575, t0 + s * 1000 + 300));
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        DataStream<VehicleEvent> events = env.fromData(input).assignTimestampsAndWatermarks(TrafficMonitoringJob.watermarks());
        List<String> actual = new ArrayList<>();
        try (CloseableIterator<KeyedNotification> it =
                     TrafficMonitoringJob.pipeline(events, registry.toUri().toString()).executeAndCollect()) {
            it.forEachRemaining(n -> actual.add(n.json));
        }

        // expected, straight from the shared arithmetic
        Map<String, List<VehicleEvent>> groups = new TreeMap<>();
        for (VehicleEvent e : input) {
            if (TrafficLogic.inPointOfInterest(e.lat, e.lon)) {
                groups.computeIfAbsent(e.lp + "@" + TrafficLogic.windowEnd(e.ts), k -> new ArrayList<>()).add(e);
            }
        }
        VehicleRegistry reg = new VehicleRegistry(Map.of("B-AA 1", "bus"));
        List<String> expected = new ArrayList<>();
        groups.forEach((k, evs) -> {
            String lp = k.substring(0, k.indexOf('@'));
            long end = Long.parseLong(k.substring(k.indexOf('@') + 1));
            expected.add(Notification.format(TrafficLogic.summarize(lp, end, evs), reg.typeOf(lp)));
        });

        assertThat(actual).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(actual).hasSize(8); // 2 vehicles x 4 windows: 25 s starting 0.9 s before a window boundary
        assertThat(actual).anySatisfy(s -> assertThat(s).contains("\"vehicleType\":\"bus\"").contains("\"speedKmh\":36"));
        assertThat(actual).anySatisfy(s -> assertThat(s).contains("\"vehicleType\":\"unregistered\"").contains("\"speedKmh\":0"));
    }
}
