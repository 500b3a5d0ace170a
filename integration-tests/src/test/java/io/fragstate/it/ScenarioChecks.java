package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;

/** Running a scenario from a test, and the checks every scenario with a recovery shares. */
final class ScenarioChecks {
    static final Path REPO = Path.of(System.getProperty("fragstate.repo", "..")).toAbsolutePath().normalize();

    private ScenarioChecks() {}

    static ScenarioRunner.Result run(Scenario s) throws Exception {
        try (ScenarioRunner runner = new ScenarioRunner(s, REPO)) {
            return runner.run();
        }
    }

    /** Runs {@code s}: exactly once, and through fragstate ({@link #assertThroughFragstate}). */
    static ScenarioRunner.Result runThroughFragstate(Scenario s) throws Exception {
        ScenarioRunner.Result r = run(s);
        assertExactlyOnce(r);
        assertThroughFragstate(r);
        return r;
    }

    /** The checkpoints really went through fragstate: the TaskManagers wrote and read fragments. */
    @SuppressWarnings("unchecked")
    static void assertThroughFragstate(ScenarioRunner.Result r) {
        Map<String, Object> perTm = (Map<String, Object>) r.fragstate.get("taskManagerMetrics");
        assertThat(perTm).as("fragstate metrics of the TaskManagers").isNotEmpty().doesNotContainKey("error");
        long written = 0;
        long fetched = 0;
        long widest = 0;
        for (Object v : perTm.values()) {
            Map<String, Long> m = (Map<String, Long>) v;
            written += m.getOrDefault("bytesWritten", 0L);
            fetched += m.getOrDefault("bytesFetched", 0L);
            widest = Math.max(widest, m.getOrDefault("peersFetchedFrom", 0L));
        }
        assertThat(written).as("bytes the TaskManagers wrote through fragstate").isPositive();
        assertThat(fetched).as("fragment bytes fetched from peers for the restore").isPositive();
        // RS(2,2): every stripe is read from k = 2 different holders
        assertThat(widest).as("peers one restoring TaskManager fetched from").isGreaterThanOrEqualTo(2);
    }

    /** The committed output equals the reference computation: nothing lost, duplicated or wrong. */
    static void assertExactlyOnce(ScenarioRunner.Result r) {
        assertThat(r.expectedNotifications).as("output lines the reference expects").isGreaterThan(500);
        assertThat(r.missing).as("notifications lost").isEmpty();
        assertThat(r.duplicatesOrUnexpected).as("notifications duplicated or wrong").isEmpty();
        assertThat(r.committedNotifications).isEqualTo(r.expectedNotifications);
        assertThat(r.keyMismatches).as("records whose Kafka key is not their plate or campaign").isZero();
    }
}
