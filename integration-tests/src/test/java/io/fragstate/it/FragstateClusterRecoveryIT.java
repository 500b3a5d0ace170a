package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * fragstate in cluster mode on the real Flink cluster: the plugin jar in {@code lib/}, one
 * networked fragstate node per JobManager/TaskManager JVM (failure domain per process, a cluster
 * key made per run with {@code fragstate keygen}) plus two standalone {@code fragstate node}
 * processes, and the same exactly-once check against the reference computation as scenario h.
 * Scenarios a (about 2.3 min) and g (about 1 min) run in the quick tier; b, c, d, e and f in the
 * full tier ({@code -Dfragstate.it.full=true}).
 */
class FragstateClusterRecoveryIT {
    private static final Path REPO = Path.of(System.getProperty("fragstate.repo", "..")).toAbsolutePath().normalize();

    private static ScenarioRunner.Result run(Scenario s) throws Exception {
        Path jobJar = Path.of(System.getProperty("fragstate.job.jar",
                "../flink-examples/traffic-monitoring/target/traffic-monitoring-0.1.0-SNAPSHOT.jar"));
        assertThat(Scenario.pluginJar(REPO)).as("plugin jar (built by java-bridge)").exists();
        try (ScenarioRunner runner = new ScenarioRunner(s, REPO, jobJar)) {
            return runner.run();
        }
    }

    private static void assertExactlyOnce(ScenarioRunner.Result r) {
        assertThat(r.expectedNotifications).isGreaterThan(1000);
        assertThat(r.missing).as("notifications lost").isEmpty();
        assertThat(r.duplicatesOrUnexpected).as("notifications duplicated or wrong").isEmpty();
        assertThat(r.committedNotifications).isEqualTo(r.expectedNotifications);
        assertThat(r.keyMismatches).as("records whose Kafka key is not their plate").isZero();
    }

    /** The checkpoints really went through fragstate: the TaskManagers wrote and read fragments. */
    @SuppressWarnings("unchecked")
    private static void assertThroughFragstate(ScenarioRunner.Result r) {
        Map<String, Object> perTm = (Map<String, Object>) r.fragstate.get("taskManagerMetrics");
        assertThat(perTm).as("fragstate metrics of the TaskManagers").isNotEmpty().doesNotContainKey("error");
        long written = 0;
        long fetched = 0;
        for (Object v : perTm.values()) {
            Map<String, Long> m = (Map<String, Long>) v;
            written += m.getOrDefault("bytesWritten", 0L);
            fetched += m.getOrDefault("bytesFetched", 0L);
        }
        assertThat(written).as("bytes the TaskManagers wrote through fragstate").isPositive();
        assertThat(fetched).as("fragment bytes fetched from peers for the restore").isPositive();
    }

    @Test
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioA_fragstateCluster_killOneTaskManager_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateKillOneTaskManager(REPO));
        RecoveryTimeline tl = r.timeline;
        assertThat(tl.killedTaskManagers).hasSize(1);
        assertThat(tl.statefulSubtasksOnKilled).as("the killed TaskManager ran stateful subtasks").isNotEmpty();
        assertThat(tl.restores).as("the job restored from a checkpoint").isGreaterThanOrEqualTo(1);
        assertThat(tl.killToRunningMs()).as("kill -> all subtasks RUNNING").isBetween(0L, 120_000L);
        assertThat(tl.subtasks).allSatisfy(s -> assertThat(s.initializingMs).isNotNegative());
        assertExactlyOnce(r);
        assertThroughFragstate(r);
        // the checkpoint went to fragstate, not to the harness' file:// directory
        assertThat(Files.exists(Path.of(r.runDir, "flink/checkpoints"))
                && Files.list(Path.of(r.runDir, "flink/checkpoints")).findAny().isPresent())
                .as("nothing written to the plain file:// checkpoint directory").isFalse();
    }

    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioB_fragstateCluster_killTwoTaskManagersAtOnce_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateKillTwoTaskManagers(REPO));
        assertThat(r.timeline.killedTaskManagers).hasSize(2);
        assertThat(r.timeline.restores).isGreaterThanOrEqualTo(1);
        assertExactlyOnce(r);
        assertThroughFragstate(r);
    }

    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioC_fragstateCluster_killDuringCheckpoint_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateKillDuringCheckpoint(REPO));
        assertThat(r.timeline.killedTaskManagers).hasSize(1);
        assertThat(r.timeline.restores).isGreaterThanOrEqualTo(1);
        assertExactlyOnce(r);
        assertThroughFragstate(r);
    }

    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioD_fragstateCluster_restartWholeClusterFromDiskStores_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateRestartCluster(REPO));
        assertThat(r.timeline.restoredFrom).as("resumed from a checkpoint in fragstate").startsWith("fragstate://");
        assertThat(r.timeline.restoredCheckpointId).as("resumed from a retained checkpoint").isPositive();
        assertExactlyOnce(r);
        assertThroughFragstate(r);
    }

    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioE_fragstateCluster_stopWithSavepointRescale_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateSavepointRescale(REPO));
        assertThat(r.timeline.restoredFrom).as("the savepoint is in fragstate").startsWith("fragstate://");
        assertThat(r.timeline.restoredCheckpointId).as("resumed from the savepoint").isPositive();
        assertThat(r.timeline.subtasks).filteredOn(s -> s.vertex.contains("window")).hasSize(3);
        assertExactlyOnce(r);
        assertThroughFragstate(r);
    }

    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioF_fragstateCluster_rocksDbIncremental_killOneTaskManager_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateRocksDbIncrementalKillOneTaskManager(REPO));
        assertThat(r.timeline.killedTaskManagers).hasSize(1);
        assertThat(r.timeline.restores).isGreaterThanOrEqualTo(1);
        assertExactlyOnce(r);
        assertThroughFragstate(r);
    }

    @Test
    @Timeout(value = 8, unit = TimeUnit.MINUTES)
    void scenarioG_wrongSetting_failsTheJobNamingTheSettingAndCommitsNothing() throws Exception {
        Path jobJar = Path.of(System.getProperty("fragstate.job.jar",
                "../flink-examples/traffic-monitoring/target/traffic-monitoring-0.1.0-SNAPSHOT.jar"));
        ScenarioRunner.RejectedConfigResult r;
        try (ScenarioRunner runner = new ScenarioRunner(Scenario.fragstateTooManyFragments(REPO), REPO, jobJar)) {
            r = runner.runExpectingRejectedConfig(java.time.Duration.ofSeconds(60),
                    java.util.List.of("cannot place 8 fragments (k=6 + m=2)", "fragstate.data-fragments"));
        }
        assertThat(r.jobState).as("the job must not run degraded").isEqualTo("FAILED");
        assertThat(r.submissionRefused).as("flink run itself reports the refusal").isTrue();
        assertThat(r.completedCheckpoints).as("checkpoints completed with a setting the cluster cannot hold").isZero();
        assertThat(r.committedNotifications).as("output committed without a checkpoint").isZero();
        assertThat(r.matchingLogLines).as("a log line naming the setting and the numbers").isNotEmpty();
    }
}
