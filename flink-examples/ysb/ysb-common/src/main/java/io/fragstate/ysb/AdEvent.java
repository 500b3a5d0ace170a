package io.fragstate.ysb;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * One ad event of the Yahoo Streaming Benchmark, as carried on the input topic: {@code
 * {"user_id","page_id","ad_id","ad_type","event_type","event_time","ip_address"}} with UUID ids
 * and the event time as a string of epoch milliseconds, as the original benchmark writes it.
 *
 * <p>A public-field POJO (not a record) so that Flink serializes it with its POJO serializer.
 */
public final class AdEvent {
    public String userId;
    public String pageId;
    public String adId;
    /** banner, modal, sponsored-search, mail or mobile */
    public String adType;
    /** view, click or purchase ({@link YsbLogic#END_OF_INPUT} for the generator's last record) */
    public String eventType;
    /** epoch milliseconds */
    public long eventTime;
    public String ipAddress;

    public AdEvent() {}

    public AdEvent(String userId, String pageId, String adId, String adType, String eventType, long eventTime,
            String ipAddress) {
        this.userId = userId;
        this.pageId = pageId;
        this.adId = adId;
        this.adType = adType;
        this.eventType = eventType;
        this.eventTime = eventTime;
        this.ipAddress = ipAddress;
    }

    /** Serializes to the wire JSON (field order and names of the original benchmark). */
    public String toJson() {
        ObjectNode root = Json.newObject();
        root.put("user_id", userId);
        root.put("page_id", pageId);
        root.put("ad_id", adId);
        root.put("ad_type", adType);
        root.put("event_type", eventType);
        root.put("event_time", Long.toString(eventTime));
        root.put("ip_address", ipAddress);
        return Json.write(root);
    }

    /**
     * Parses the wire JSON. {@code event_time} may be a string of digits (the original) or a number.
     *
     * @throws IllegalArgumentException when the text is not a JSON object, or {@code ad_id},
     *     {@code event_type} or {@code event_time} is missing or malformed
     */
    public static AdEvent parse(String json) {
        JsonNode root = Json.object(json);
        String adId = Json.requiredText(root, "ad_id", json);
        String eventType = Json.requiredText(root, "event_type", json);
        JsonNode t = root.get("event_time");
        long eventTime;
        if (t != null && t.isIntegralNumber()) {
            eventTime = t.longValue();
        } else if (t != null && t.isTextual() && t.asText().matches("-?\\d{1,18}")) {
            eventTime = Long.parseLong(t.asText());
        } else {
            throw new IllegalArgumentException("missing or non-integer field 'event_time': " + Json.abbreviate(json));
        }
        return new AdEvent(Json.optionalText(root, "user_id"), Json.optionalText(root, "page_id"), adId,
                Json.optionalText(root, "ad_type"), eventType, eventTime, Json.optionalText(root, "ip_address"));
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof AdEvent)) {
            return false;
        }
        AdEvent e = (AdEvent) o;
        return eventTime == e.eventTime && Objects.equals(userId, e.userId) && Objects.equals(pageId, e.pageId)
                && Objects.equals(adId, e.adId) && Objects.equals(adType, e.adType)
                && Objects.equals(eventType, e.eventType) && Objects.equals(ipAddress, e.ipAddress);
    }

    @Override
    public int hashCode() {
        return Objects.hash(userId, pageId, adId, adType, eventType, eventTime, ipAddress);
    }

    @Override
    public String toString() {
        return toJson();
    }
}
