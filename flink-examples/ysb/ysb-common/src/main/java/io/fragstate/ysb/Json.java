package io.fragstate.ysb;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** One JSON mapper for the formats of this package, and field access with errors that quote the record. */
final class Json {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}

    /** The JSON object {@code json} holds; an error quoting it when it is not JSON or not an object. */
    static JsonNode object(String json) {
        final JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + abbreviate(json), e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("not a JSON object: " + abbreviate(json));
        }
        return root;
    }

    /** {@code node} as one line of JSON. */
    static String write(JsonNode node) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialize " + node, e);
        }
    }

    static ObjectNode newObject() {
        return MAPPER.createObjectNode();
    }

    static String requiredText(JsonNode root, String field, String json) {
        JsonNode v = root.get(field);
        if (v == null || !v.isTextual() || v.asText().isEmpty()) {
            throw new IllegalArgumentException("missing or empty string field '" + field + "': " + abbreviate(json));
        }
        return v.asText();
    }

    static String optionalText(JsonNode root, String field) {
        JsonNode v = root.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    static String abbreviate(String s) {
        if (s == null) {
            return "null";
        }
        return s.length() <= 120 ? s : s.substring(0, 120) + "...";
    }
}
