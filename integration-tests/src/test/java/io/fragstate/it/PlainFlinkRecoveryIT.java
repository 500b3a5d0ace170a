package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scenario h of issue 5: the plain Flink setup (HashMap state backend, {@code file://}
 * checkpoints) through the same harness the fragstate scenarios use. A TaskManager running
 * stateful window subtasks is killed with SIGKILL after a few checkpoints; the committed output
 * must equal the reference computation exactly.
 */
class PlainFlinkRecoveryIT {
    @Test
    @Timeout(value = 12, unit = java.util.concurrent.TimeUnit.MINUTES)
    void scenarioH_killOneTaskManager_exactlyOnce() throws Exception {
        Path repo = Path.of(System.getProperty("fragstate.repo", ".."));
        Path jobJar = Path.of(System.getProperty("fragstate.job.jar",
                "../flink-examples/traffic-monitoring/target/traffic-monitoring-0.1.0-SNAPSHOT.jar"));
        ScenarioRunner.Result r;
        try (ScenarioRunner runner = new ScenarioRunner(Scenario.plainFlinkKillOneTaskManager(), repo, jobJar)) {
            r = runner.run();
        }
        RecoveryTimeline tl = r.timeline;
        assertThat(tl.killedTaskManagers).hasSize(1);
        assertThat(tl.statefulSubtasksOnKilled).as("the killed TaskManager ran stateful subtasks").isNotEmpty();
        assertThat(tl.restores).as("the job restored from a checkpoint").isGreaterThanOrEqualTo(1);
        assertThat(tl.detectionMs()).as("failure detected after the kill").isBetween(0L, 30_000L);
        assertThat(tl.killToRunningMs()).as("kill -> all subtasks RUNNING").isBetween(0L, 120_000L);
        assertThat(r.expectedNotifications).isGreaterThan(1000);
        assertThat(r.missing).as("notifications lost").isEmpty();
        assertThat(r.duplicatesOrUnexpected).as("notifications duplicated or wrong").isEmpty();
        assertThat(r.committedNotifications).isEqualTo(r.expectedNotifications);
    }
}
