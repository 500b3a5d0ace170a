package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;

/** Running a scenario from a test, and the checks every scenario with a recovery shares. */
final class ScenarioChecks {
    static final Path REPO = Path.of(System.getProperty("fragstate.repo", "..")).toAbsolutePath().normalize();

    private ScenarioChecks() {}

    static ScenarioRunner.Result run(Scenario s) throws Exception {
        try (ScenarioRunner runner = new ScenarioRunner(s, REPO)) {
            return runner.run();
        }
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
