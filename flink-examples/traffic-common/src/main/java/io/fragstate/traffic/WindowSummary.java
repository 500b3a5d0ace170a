package io.fragstate.traffic;

import java.util.Objects;

/** Output of the window stage: one vehicle's average speed in one 10 s window. */
public final class WindowSummary {
    /** Exclusive end of the window, epoch millis. */
    public long windowEnd;
    public String lp;
    /** Last position in the window. */
    public double lat;
    public double lon;
    public int speedKmh;
    /** Number of reports in the window. */
    public int reports;

    public WindowSummary() {}

    public WindowSummary(long windowEnd, String lp, double lat, double lon, int speedKmh, int reports) {
        this.windowEnd = windowEnd;
        this.lp = lp;
        this.lat = lat;
        this.lon = lon;
        this.speedKmh = speedKmh;
        this.reports = reports;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof WindowSummary)) {
            return false;
        }
        WindowSummary w = (WindowSummary) o;
        return windowEnd == w.windowEnd && speedKmh == w.speedKmh && reports == w.reports
                && Double.compare(lat, w.lat) == 0 && Double.compare(lon, w.lon) == 0 && Objects.equals(lp, w.lp);
    }

    @Override
    public int hashCode() {
        return Objects.hash(windowEnd, lp, lat, lon, speedKmh, reports);
    }

    @Override
    public String toString() {
        return "WindowSummary{windowEnd=" + windowEnd + ", lp=" + lp + ", lat=" + lat + ", lon=" + lon
                + ", speedKmh=" + speedKmh + ", reports=" + reports + "}";
    }
}
