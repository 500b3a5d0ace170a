package io.fragstate.generator;

import io.fragstate.traffic.Notification;
import io.fragstate.traffic.TrafficLogic;
import io.fragstate.traffic.VehicleEvent;
import io.fragstate.traffic.VehicleRegistry;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reference implementation of the Traffic Monitoring job outside Flink: from the generator's
 * parameters it computes the exact multiset of notifications the job must write (exactly once)
 * to its output topic. It replays the same simulation, sends every event through its JSON wire
 * form like the job receives it, and uses the same filter, window and speed arithmetic
 * ({@link TrafficLogic}) and the same formatting ({@link Notification}).
 *
 * <p>Assumptions it checks: no event is late (the generator's disorder within a partition is
 * below the 2 s watermark bound) and every window closes (the end-of-input events move every
 * partition's watermark past the last window).
 */
public final class ReferenceModel {
    private ReferenceModel() {}

    /** Expected notification JSON strings, sorted. */
    public static List<String> expectedNotifications(GeneratorConfig config) {
        TrafficSimulator sim = new TrafficSimulator(config);
        // (window end, plate) -> events, in arrival order
        Map<Long, Map<String, List<VehicleEvent>>> windows = new TreeMap<>();
        long maxTs = Long.MIN_VALUE;
        while (sim.hasNext()) {
            for (VehicleEvent e : sim.nextSecond()) {
                VehicleEvent wire = VehicleEvent.parse(e.toJson());
                if (maxTs != Long.MIN_VALUE && wire.ts <= maxTs - TrafficLogic.MAX_OUT_OF_ORDERNESS_MS - 1) {
                    throw new IllegalStateException("the generator produced a late event: " + wire);
                }
                maxTs = Math.max(maxTs, wire.ts);
                if (TrafficLogic.inPointOfInterest(wire.lat, wire.lon)) {
                    windows.computeIfAbsent(TrafficLogic.windowEnd(wire.ts), k -> new TreeMap<>())
                            .computeIfAbsent(wire.lp, k -> new ArrayList<>())
                            .add(wire);
                }
            }
        }
        VehicleEvent flush = VehicleEvent.parse(sim.flushEvent().toJson());
        if (TrafficLogic.inPointOfInterest(flush.lat, flush.lon)) {
            throw new IllegalStateException("the end-of-input event must lie outside the point of interest");
        }
        long finalWatermark = flush.ts - TrafficLogic.MAX_OUT_OF_ORDERNESS_MS - 1;
        VehicleRegistry registry = sim.registry();
        List<String> out = new ArrayList<>();
        windows.forEach((end, byPlate) -> {
            if (end - 1 > finalWatermark) {
                throw new IllegalStateException("window ending " + end + " would not close before the end of input");
            }
            byPlate.forEach((lp, events) ->
                    out.add(Notification.format(TrafficLogic.summarize(lp, end, events), registry.typeOf(lp))));
        });
        Collections.sort(out);
        return out;
    }
}
