package io.fragstate.traffic;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * One position report of a vehicle, as carried on the input topic:
 * {@code {"lp": "<plate>", "pt": {"lt": <lat>, "lg": <lon>}, "ts": <epoch millis>}}.
 *
 * <p>A public-field POJO (not a record) so that Flink serializes it with its POJO serializer.
 */
public final class VehicleEvent {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** Licence plate; also the Kafka record key. */
    public String lp;
    /** Latitude in degrees. */
    public double lat;
    /** Longitude in degrees. */
    public double lon;
    /** Event time, epoch milliseconds; also the Kafka record timestamp. */
    public long ts;

    public VehicleEvent() {}

    public VehicleEvent(String lp, double lat, double lon, long ts) {
        this.lp = lp;
        this.lat = lat;
        this.lon = lon;
        this.ts = ts;
    }

    /** Serializes to the wire JSON. */
    public String toJson() {
        ObjectNode root = MAPPER.createObjectNode();
        root.put("lp", lp);
        ObjectNode pt = root.putObject("pt");
        pt.put("lt", lat);
        pt.put("lg", lon);
        root.put("ts", ts);
        try {
            return MAPPER.writeValueAsString(root);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialize " + this, e);
        }
    }

    /**
     * Parses the wire JSON.
     *
     * @throws IllegalArgumentException when the text is not JSON or a field is missing or of the wrong type
     */
    public static VehicleEvent parse(String json) {
        final JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + abbreviate(json), e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("not a JSON object: " + abbreviate(json));
        }
        JsonNode lp = root.get("lp");
        JsonNode pt = root.get("pt");
        JsonNode ts = root.get("ts");
        if (lp == null || !lp.isTextual() || lp.asText().isEmpty()) {
            throw new IllegalArgumentException("missing or empty string field 'lp': " + abbreviate(json));
        }
        if (pt == null || !pt.isObject() || pt.get("lt") == null || !pt.get("lt").isNumber()
                || pt.get("lg") == null || !pt.get("lg").isNumber()) {
            throw new IllegalArgumentException("missing numeric fields 'pt.lt'/'pt.lg': " + abbreviate(json));
        }
        if (ts == null || !ts.isIntegralNumber()) {
            throw new IllegalArgumentException("missing integer field 'ts': " + abbreviate(json));
        }
        return new VehicleEvent(lp.asText(), pt.get("lt").doubleValue(), pt.get("lg").doubleValue(), ts.longValue());
    }

    private static String abbreviate(String s) {
        if (s == null) {
            return "null";
        }
        return s.length() <= 120 ? s : s.substring(0, 120) + "...";
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof VehicleEvent)) {
            return false;
        }
        VehicleEvent e = (VehicleEvent) o;
        return ts == e.ts && Double.compare(lat, e.lat) == 0 && Double.compare(lon, e.lon) == 0
                && java.util.Objects.equals(lp, e.lp);
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(lp, lat, lon, ts);
    }

    @Override
    public String toString() {
        return "VehicleEvent{lp=" + lp + ", lat=" + lat + ", lon=" + lon + ", ts=" + ts + "}";
    }
}
