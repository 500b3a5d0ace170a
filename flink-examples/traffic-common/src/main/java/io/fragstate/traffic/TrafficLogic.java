package io.fragstate.traffic;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The arithmetic of the Traffic Monitoring job, in one place: the point-of-interest filter, the
 * tumbling-window assignment and the per-window average speed. The Flink job and the reference
 * computation both call these methods, so they cannot drift apart.
 */
public final class TrafficLogic {
    /** Point of interest (Berlin, near Brandenburger Tor / Unter den Linden). */
    public static final double POI_LAT = 52.51623;
    public static final double POI_LON = 13.38532;
    /** Events farther than this from the point of interest are dropped. */
    public static final double POI_RADIUS_METERS = 1000.0;

    /** Bounded out-of-orderness of the watermarks. */
    public static final long MAX_OUT_OF_ORDERNESS_MS = 2_000;
    /** Tumbling event-time window size and offset. */
    public static final long WINDOW_SIZE_MS = 10_000;
    public static final long WINDOW_OFFSET_MS = 1_000;
    /** Each active vehicle reports once per update interval. */
    public static final double UPDATE_INTERVAL_SECONDS = 1.0;

    private static final Comparator<VehicleEvent> BY_TIME = Comparator.comparingLong(e -> e.ts);

    private TrafficLogic() {}

    /** True when the point lies within {@link #POI_RADIUS_METERS} of the point of interest. */
    public static boolean inPointOfInterest(double lat, double lon) {
        return Geo.distanceMeters(lat, lon, POI_LAT, POI_LON) <= POI_RADIUS_METERS;
    }

    /**
     * Start of the tumbling window that contains {@code timestampMs}, the same arithmetic as
     * Flink's {@code TimeWindow.getWindowStartWithOffset} (also correct for negative times).
     */
    public static long windowStart(long timestampMs, long offsetMs, long sizeMs) {
        final long remainder = (timestampMs - offsetMs) % sizeMs;
        return remainder < 0 ? timestampMs - (remainder + sizeMs) : timestampMs - remainder;
    }

    /** Exclusive end of the job's window that contains {@code timestampMs}. */
    public static long windowEnd(long timestampMs) {
        return windowStart(timestampMs, WINDOW_OFFSET_MS, WINDOW_SIZE_MS) + WINDOW_SIZE_MS;
    }

    /**
     * Average speed of one vehicle in one window: the sum of geodesic distances between
     * consecutive points (in event-time order) divided by the elapsed time, taken as the number
     * of reports times the update interval, in km/h, rounded to the nearest integer.
     *
     * @param events the window's events of one vehicle, in any order; not empty
     */
    public static WindowSummary summarize(String lp, long windowEnd, Iterable<VehicleEvent> events) {
        List<VehicleEvent> sorted = new ArrayList<>();
        for (VehicleEvent e : events) {
            sorted.add(e);
        }
        if (sorted.isEmpty()) {
            throw new IllegalArgumentException("a window of " + lp + " without events");
        }
        sorted.sort(BY_TIME); // stable: equal timestamps keep their arrival order
        double meters = 0.0;
        for (int i = 1; i < sorted.size(); i++) {
            VehicleEvent a = sorted.get(i - 1);
            VehicleEvent b = sorted.get(i);
            meters += Geo.distanceMeters(a.lat, a.lon, b.lat, b.lon);
        }
        VehicleEvent last = sorted.get(sorted.size() - 1);
        return new WindowSummary(windowEnd, lp, last.lat, last.lon, speedKmh(meters, sorted.size()), sorted.size());
    }

    /** {@code meters} travelled over {@code reports} update intervals, in km/h, rounded. */
    public static int speedKmh(double meters, int reports) {
        if (reports <= 0) {
            throw new IllegalArgumentException("reports must be positive: " + reports);
        }
        double metersPerSecond = meters / (reports * UPDATE_INTERVAL_SECONDS);
        return (int) Math.round(metersPerSecond * 3.6);
    }
}
