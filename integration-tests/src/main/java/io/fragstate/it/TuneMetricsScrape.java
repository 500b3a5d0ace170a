package io.fragstate.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The Prometheus metrics of a running {@code fragstate tune} (started with {@code --metrics-listen
 * 127.0.0.1:0}): the address comes from its {@code metrics} JSON line, the text is OpenMetrics.
 */
final class TuneMetricsScrape {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private TuneMetricsScrape() {}

    /** GETs the metrics of the {@code fragstate tune} whose JSON lines are {@code tuneJsonl}. */
    static String scrape(Path tuneJsonl) throws IOException, InterruptedException {
        String listen = null;
        for (String line : Files.readAllLines(tuneJsonl)) {
            JsonNode n = MAPPER.readTree(line);
            if (n.path("event").asText().equals("metrics")) {
                listen = n.path("listen").asText();
            }
        }
        if (listen == null) {
            throw new IllegalStateException("fragstate tune printed no metrics line in " + tuneJsonl);
        }
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://" + listen + "/metrics")).timeout(Duration.ofSeconds(10)).GET().build();
        HttpResponse<String> r = HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("GET http://" + listen + "/metrics -> HTTP " + r.statusCode());
        }
        return r.body();
    }

    /** The value of the sample {@code name} without labels in OpenMetrics {@code text}. */
    static double value(String text, String name) {
        return text.lines()
                .filter(l -> l.startsWith(name + " "))
                .mapToDouble(l -> Double.parseDouble(l.substring(name.length() + 1).strip()))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no sample " + name + " in the metrics"));
    }
}
