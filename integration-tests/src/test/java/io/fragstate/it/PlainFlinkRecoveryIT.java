package io.fragstate.it;

import static io.fragstate.it.ScenarioChecks.assertExactlyOnce;
import static io.fragstate.it.ScenarioChecks.run;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The plain Flink setup (HashMap state backend, {@code file://} checkpoints) through the same
 * harness the fragstate scenarios use: the reference that the harness itself is right.
 *
 * <p>Full tier only ({@code -Dfragstate.it.full=true}): scenario h (kill -9 of a TaskManager with
 * stateful subtasks) and the plain-Flink versions of the cluster restart (d) and savepoint + rescale
 * (e) flows. The quick tier's fragstate scenarios run the same flows through the same harness, and
 * the recovery benchmark's quick variant kills a TaskManager of a plain Flink cluster (HDFS) in CI.
 */
class PlainFlinkRecoveryIT {
    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioH_killOneTaskManager_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.plainFlinkKillOneTaskManager());
        RecoveryTimeline tl = r.timeline;
        assertThat(tl.killedTaskManagers).hasSize(1);
        assertThat(tl.statefulSubtasksOnKilled).as("the killed TaskManager ran stateful subtasks").isNotEmpty();
        assertThat(tl.restores).as("the job restored from a checkpoint").isGreaterThanOrEqualTo(1);
        assertThat(tl.detectionMs()).as("failure detected after the kill").isBetween(0L, 30_000L);
        assertThat(tl.killToRunningMs()).as("kill -> all subtasks RUNNING").isBetween(0L, 120_000L);
        assertThat(tl.subtasks).allSatisfy(s -> assertThat(s.initializingMs).isNotNegative());
        assertExactlyOnce(r);
    }

    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioD_plainFlink_restartWholeCluster_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.plainFlinkRestartCluster());
        assertThat(r.timeline.restoredCheckpointId).as("resumed from a retained checkpoint").isPositive();
        assertThat(r.timeline.killToRunningMs()).isPositive();
        assertExactlyOnce(r);
    }

    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioE_plainFlink_savepointCancelRescale_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.plainFlinkSavepointRescale());
        assertThat(r.timeline.restoredCheckpointId).as("resumed from the savepoint").isPositive();
        assertThat(r.timeline.subtasks).filteredOn(s -> s.vertex.contains("window")).hasSize(3);
        assertExactlyOnce(r);
    }
}
