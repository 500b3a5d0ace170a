package io.fragstate.ysb;

import com.fasterxml.jackson.databind.JsonNode;

/** Field access with errors that quote the record (the parsers of this package). */
final class Json {
    private Json() {}

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
