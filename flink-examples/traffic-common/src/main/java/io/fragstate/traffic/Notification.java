package io.fragstate.traffic;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The enriched result the job writes to the output topic (record key: the plate). Its JSON form
 * is the exact string compared by the exactly-once tests.
 */
public final class Notification {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Notification() {}

    /** Enriches a window summary with the vehicle type and formats it as one JSON line. */
    public static String format(WindowSummary s, String vehicleType) {
        ObjectNode n = MAPPER.createObjectNode();
        n.put("windowEnd", s.windowEnd);
        n.put("lp", s.lp);
        n.put("vehicleType", vehicleType);
        n.put("speedKmh", s.speedKmh);
        n.put("reports", s.reports);
        ObjectNode last = n.putObject("last");
        last.put("lt", s.lat);
        last.put("lg", s.lon);
        try {
            return MAPPER.writeValueAsString(n);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot format " + s, e);
        }
    }
}
