package io.fragstate.generator;

import io.fragstate.traffic.VehicleEvent;
import io.fragstate.traffic.VehicleRegistry;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Deterministic traffic: vehicles drive random routes on the road graph at a random speed of
 * 10-79 km/h per road section and report their position once per simulated second while active.
 * In second {@code t} the vehicles {@code 0 .. n(t)-1} are active, n(t) = round(profile(t) * scale);
 * a vehicle that becomes inactive pauses where it is. Vehicle {@code i} draws everything from its
 * own random stream (split from the seed in creation order), so the result depends only on the
 * {@link GeneratorConfig}.
 */
public final class TrafficSimulator {
    /** Plate of the end-of-input events: outside the point of interest, never windowed. */
    public static final String FLUSH_PLATE = "~end-of-input";

    private static final String[] DISTRICTS = {"B", "P", "HH", "M", "K", "F", "S", "D", "DO", "BO", "HB", "L", "DD",
        "H", "KA", "MZ", "PM", "LOS", "TF", "BAR", "MOL", "OHV", "HVL", "OPR"};
    private static final String LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ";
    private static final String[] TYPES = {"car", "van", "taxi", "bus", "truck", "motorcycle"};
    private static final int[] TYPE_WEIGHTS = {70, 10, 8, 4, 6, 2};

    private final GeneratorConfig config;
    private final SplittableRandom master;
    private final List<Vehicle> fleet = new ArrayList<>();
    private final Set<String> plates = new HashSet<>();
    private int second;

    public TrafficSimulator(GeneratorConfig config) {
        this.config = config;
        this.master = new SplittableRandom(config.seed());
    }

    public boolean hasNext() {
        return second < config.durationSeconds();
    }

    /** Simulated second that {@link #nextSecond()} produces next. */
    public int currentSecond() {
        return second;
    }

    /** Events of the next simulated second, in vehicle order, then moves the vehicles. */
    public List<VehicleEvent> nextSecond() {
        if (!hasNext()) {
            throw new IllegalStateException("simulation finished after " + config.durationSeconds() + " s");
        }
        int active = activeVehicles(second);
        while (fleet.size() < active) {
            fleet.add(newVehicle(fleet.size()));
        }
        long base = config.startEpochMs() + second * 1000L;
        List<VehicleEvent> out = new ArrayList<>(active);
        for (int i = 0; i < active; i++) {
            Vehicle v = fleet.get(i);
            out.add(new VehicleEvent(v.plate, v.lat(), v.lon(), base + v.phaseMs));
            v.drive(1.0);
        }
        second++;
        return out;
    }

    public int activeVehicles(int s) {
        return (int) Math.round(config.profile().count(s) * config.scale());
    }

    /** The end-of-input event (one is sent to every partition so every watermark passes the end). */
    public VehicleEvent flushEvent() {
        return new VehicleEvent(FLUSH_PLATE, 0.0, 0.0, config.flushEventTimeMs());
    }

    /**
     * Reference table for the job's enrichment: every vehicle created so far except every tenth
     * (ids 9, 19, ...), which stay unregistered so that the default path is exercised too.
     */
    public VehicleRegistry registry() {
        Map<String, String> m = new LinkedHashMap<>();
        for (Vehicle v : fleet) {
            if (v.id % 10 != 9) {
                m.put(v.plate, v.type);
            }
        }
        return new VehicleRegistry(m);
    }

    /** A fresh simulation of {@code config} as the records {@link KafkaEventProducer} sends: key = plate. */
    public static EventSource events(GeneratorConfig config) {
        TrafficSimulator sim = new TrafficSimulator(config);
        return new EventSource() {
            @Override
            public int durationSeconds() {
                return config.durationSeconds();
            }

            @Override
            public boolean hasNext() {
                return sim.hasNext();
            }

            @Override
            public int currentSecond() {
                return sim.currentSecond();
            }

            @Override
            public List<Event> nextSecond() {
                return sim.nextSecond().stream().map(TrafficSimulator::record).toList();
            }

            @Override
            public Event flushEvent() {
                return record(sim.flushEvent());
            }
        };
    }

    private static EventSource.Event record(VehicleEvent e) {
        return new EventSource.Event(e.lp, e.ts, e.toJson());
    }

    /** Runs a fresh simulation to the end and returns the registry of its whole fleet. */
    public static VehicleRegistry registryFor(GeneratorConfig config) {
        TrafficSimulator sim = new TrafficSimulator(config);
        while (sim.hasNext()) {
            sim.nextSecond();
        }
        return sim.registry();
    }

    private Vehicle newVehicle(int id) {
        SplittableRandom rnd = master.split();
        String plate;
        do {
            plate = DISTRICTS[rnd.nextInt(DISTRICTS.length)] + "-" + LETTERS.charAt(rnd.nextInt(LETTERS.length()))
                    + (rnd.nextBoolean() ? String.valueOf(LETTERS.charAt(rnd.nextInt(LETTERS.length()))) : "")
                    + " " + (1 + rnd.nextInt(9999));
        } while (!plates.add(plate));
        int w = rnd.nextInt(100);
        String type = TYPES[TYPES.length - 1];
        for (int i = 0, acc = 0; i < TYPES.length; i++) {
            acc += TYPE_WEIGHTS[i];
            if (w < acc) {
                type = TYPES[i];
                break;
            }
        }
        int[] starts = config.graph().routableNodes();
        int from = starts[rnd.nextInt(starts.length)];
        return new Vehicle(id, plate, type, rnd, rnd.nextInt(1000), from);
    }

    private final class Vehicle {
        final int id;
        final String plate;
        final String type;
        final SplittableRandom rnd;
        final int phaseMs;
        int from;
        int to;
        double length;
        double progress;
        double metersPerSecond;

        Vehicle(int id, String plate, String type, SplittableRandom rnd, int phaseMs, int start) {
            this.id = id;
            this.plate = plate;
            this.type = type;
            this.rnd = rnd;
            this.phaseMs = phaseMs;
            this.from = start;
            int[] n = config.graph().neighbours(start);
            enter(start, n[rnd.nextInt(n.length)]);
        }

        private void enter(int a, int b) {
            from = a;
            to = b;
            length = config.graph().edgeLengthMeters(a, b);
            progress = 0;
            metersPerSecond = (10 + rnd.nextInt(70)) / 3.6; // 10..79 km/h for this road section
        }

        void drive(double seconds) {
            double left = metersPerSecond * seconds;
            for (int guard = 0; progress + left >= length && guard < 10_000; guard++) {
                left -= length - progress;
                int[] n = config.graph().neighbours(to);
                int next;
                if (n.length == 1) {
                    next = n[0]; // dead end: turn around
                } else {
                    do {
                        next = n[rnd.nextInt(n.length)];
                    } while (next == from); // no U-turns at junctions
                }
                enter(to, next);
            }
            progress += left;
        }

        double lat() {
            double f = length == 0 ? 0 : progress / length;
            return config.graph().lat(from) + f * (config.graph().lat(to) - config.graph().lat(from));
        }

        double lon() {
            double f = length == 0 ? 0 : progress / length;
            return config.graph().lon(from) + f * (config.graph().lon(to) - config.graph().lon(from));
        }
    }
}
