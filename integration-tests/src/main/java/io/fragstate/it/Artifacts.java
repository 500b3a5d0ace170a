package io.fragstate.it;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Properties;

/**
 * The build outputs the harness runs: the job jars (Traffic Monitoring, YSB) and the fragstate plugin jar.
 * Each comes from a system property (the failsafe configuration in {@code integration-tests/pom.xml}
 * sets both from the Maven project version) or else from its place under {@code repo}, named with
 * the project version that Maven wrote into {@code project.properties} when it built the harness.
 */
final class Artifacts {
    private Artifacts() {}

    /** The Maven project version this harness was built with (e.g. 0.1.0-SNAPSHOT). */
    static String projectVersion() {
        Properties p = new Properties();
        try (InputStream in = Artifacts.class.getResourceAsStream("project.properties")) {
            if (in == null) {
                throw new IllegalStateException("io/fragstate/it/project.properties is missing from the classpath (build with mvn)");
            }
            p.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String v = p.getProperty("version", "");
        if (v.isBlank() || v.contains("${")) {
            throw new IllegalStateException("project.properties holds no filtered version ('" + v + "'): build with mvn");
        }
        return v;
    }

    /** The job jar: {@code -Dfragstate.job.jar}, else {@code flink-examples/traffic-monitoring/target/traffic-monitoring-<version>.jar}. */
    static Path jobJar(Path repo) {
        return fromPropertyOr("fragstate.job.jar", repo, "flink-examples/traffic-monitoring/target/traffic-monitoring-%s.jar");
    }

    /** The YSB job jar: {@code -Dfragstate.ysb.job.jar}, else {@code flink-examples/ysb/ysb-job/target/ysb-job-<version>.jar}. */
    static Path ysbJobJar(Path repo) {
        return fromPropertyOr("fragstate.ysb.job.jar", repo, "flink-examples/ysb/ysb-job/target/ysb-job-%s.jar");
    }

    /**
     * The Traffic Monitoring job built for Flink 1.20: {@code -Dfragstate.lts.job.jar}, else
     * {@code flink-lines/flink-1.20-traffic-monitoring/target/traffic-monitoring-flink-1.20-<version>.jar}.
     */
    static Path ltsJobJar(Path repo) {
        return fromPropertyOr("fragstate.lts.job.jar", repo,
                "flink-lines/flink-1.20-traffic-monitoring/target/traffic-monitoring-flink-1.20-%s.jar");
    }

    /** The Flink 1.20 release the plugin is tested on ({@code flink.lts.version} of the Maven parent). */
    static String flinkLtsVersion() {
        return requiredProperty("fragstate.flink.lts.version");
    }

    /** The newest Flink release the plugin is tested on ({@code flink.next.version} of the Maven parent). */
    static String flinkNextVersion() {
        return requiredProperty("fragstate.flink.next.version");
    }

    private static String requiredProperty(String name) {
        String v = System.getProperty(name, "");
        if (v.isBlank()) {
            throw new IllegalStateException("system property " + name + " is not set (the failsafe configuration in"
                    + " integration-tests/pom.xml sets it from the Maven parent)");
        }
        return v;
    }

    /** The plugin jar built by java-bridge: {@code -Dfragstate.plugin.jar}, else {@code java-bridge/target/fragstate-flink-<version>.jar}. */
    static Path pluginJar(Path repo) {
        return fromPropertyOr("fragstate.plugin.jar", repo, "java-bridge/target/fragstate-flink-%s.jar");
    }

    /** The {@code fragstate} CLI: {@code -Dfragstate.bin}, else {@code target/<-Dfragstate.cargoProfile, release>/fragstate}. */
    static Path fragstateBinary(Path repo) {
        String profile = System.getProperty("fragstate.cargoProfile", "release");
        return Path.of(System.getProperty("fragstate.bin", repo.resolve("target/" + profile + "/fragstate").toString()));
    }

    /** The state-bench job jar: {@code -Dfragstate.bench.jar}, else {@code flink-examples/state-bench/target/state-bench-<version>.jar}. */
    static Path benchJobJar(Path repo) {
        return fromPropertyOr("fragstate.bench.jar", repo, "flink-examples/state-bench/target/state-bench-%s.jar");
    }

    private static Path fromPropertyOr(String property, Path repo, String pathWithVersion) {
        String set = System.getProperty(property);
        return set != null ? Path.of(set) : repo.resolve(String.format(pathWithVersion, projectVersion()));
    }
}
