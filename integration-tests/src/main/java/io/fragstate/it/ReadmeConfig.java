package io.fragstate.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code config.yaml} lines that README.md tells a user to add, read from the README itself
 * (every {@code ```yaml} block of the section "Use it with Flink"), so that scenario r checks
 * the documentation as written and fails when the README and the plugin drift apart.
 */
final class ReadmeConfig {
    private static final String SECTION = "## Use it with Flink";
    /** Keys the section must document for scenario r to mean anything. */
    private static final List<String> REQUIRED = List.of("state.backend.type", "fragstate.mode",
            "fragstate.cluster-key-file", "fragstate.failure-domain");

    private ReadmeConfig() {}

    /** The flat {@code key: value} lines of the section's yaml blocks, in order (comments dropped). */
    static Map<String, String> flinkLines(Path repo) {
        Path readme = repo.resolve("README.md");
        String text;
        try {
            text = Files.readString(readme);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + readme, e);
        }
        int start = text.indexOf("\n" + SECTION + "\n");
        if (start < 0) {
            throw new IllegalStateException(readme + " has no section '" + SECTION + "'");
        }
        int end = text.indexOf("\n## ", start + SECTION.length() + 1);
        String section = text.substring(start, end < 0 ? text.length() : end);
        Map<String, String> config = new LinkedHashMap<>();
        boolean inYaml = false;
        for (String raw : section.split("\n")) {
            String line = raw.strip();
            if (line.startsWith("```")) {
                inYaml = !inYaml && line.equals("```yaml");
                continue;
            }
            if (!inYaml || line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int comment = line.indexOf(" #");
            String setting = (comment < 0 ? line : line.substring(0, comment)).strip();
            int colon = setting.indexOf(": ");
            if (colon < 0) {
                throw new IllegalStateException(readme + ": not a flat 'key: value' line in a yaml block of '"
                        + SECTION + "': " + raw);
            }
            config.put(setting.substring(0, colon).strip(), setting.substring(colon + 2).strip());
        }
        for (String key : REQUIRED) {
            if (!config.containsKey(key)) {
                throw new IllegalStateException(readme + ", section '" + SECTION + "', documents no " + key
                        + " line (found: " + config.keySet() + ")");
            }
        }
        return config;
    }

    /**
     * TaskManagers a single-host cluster needs to keep writing after one of them is lost, as the
     * README says: k + m + 1 (a writer places k + m fragments on nodes other than itself; with the
     * JobManager that is k + m + 2 JVMs, one of which may die). k and m default to the plugin's 4
     * and 2 (java-bridge/OPTIONS.md).
     */
    static int singleHostTaskManagers(Map<String, String> config) {
        return fragmentsPerObject(config) + 1;
    }

    /** k + m of {@code config}, with the plugin's defaults k = 4, m = 2 (java-bridge/OPTIONS.md). */
    static int fragmentsPerObject(Map<String, String> config) {
        int k = Integer.parseInt(config.getOrDefault("fragstate.data-fragments", "4").strip());
        int m = Integer.parseInt(config.getOrDefault("fragstate.parity-fragments", "2").strip());
        return k + m;
    }
}
