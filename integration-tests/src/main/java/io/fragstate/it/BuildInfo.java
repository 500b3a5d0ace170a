package io.fragstate.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * What a long run was built from and ran on, for its summary: runs of different days are only
 * comparable when these match (the same build deleted 1.59x more a minute on one day's machine
 * than on another's: soak/results/2026-12-06-10min-same-machine-ab).
 *
 * @param commit       the commit checked out ({@code git describe --always --dirty --exclude=*}: a
 *                     hash, {@code -dirty} with local changes), or {@code unknown}
 * @param cargoProfile the Rust build profile ({@code -Dfragstate.cargoProfile}, release by default)
 * @param cpuModel     the first {@code model name} of {@code /proc/cpuinfo}, or {@code unknown}
 * @param cores        processors the JVM sees
 */
record BuildInfo(String commit, String cargoProfile, String cpuModel, int cores) {
    static final String UNKNOWN = "unknown";

    static BuildInfo of(Path repo) {
        return new BuildInfo(gitCommit(repo), System.getProperty("fragstate.cargoProfile", "release"), readCpuModel(),
                Runtime.getRuntime().availableProcessors());
    }

    Map<String, Object> asMap() {
        return Map.of("commit", commit, "cargoProfile", cargoProfile, "cpuModel", cpuModel, "cores", cores);
    }

    /** One line for a report's header. */
    String describe() {
        return "built from " + commit + " (cargo profile " + cargoProfile + "), run on " + cores + " × " + cpuModel;
    }

    private static String gitCommit(Path repo) {
        try {
            return Shell.run(repo, Map.of(), Duration.ofSeconds(30), List.of("git", "describe", "--always", "--dirty", "--exclude=*")).strip();
        } catch (IllegalStateException e) {
            // a source tarball, or no git installed: the summary says so rather than failing the run
            return UNKNOWN;
        }
    }

    static String modelName(List<String> cpuinfo) {
        return cpuinfo.stream().filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).strip())
                .findFirst().orElse(UNKNOWN);
    }

    private static String readCpuModel() {
        try {
            return modelName(Files.readAllLines(Path.of("/proc/cpuinfo")));
        } catch (IOException e) {
            return UNKNOWN;
        }
    }
}
