package io.fragstate.it;

import static io.fragstate.it.ScenarioChecks.REPO;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * fragstate in cluster mode on the real Flink cluster: the plugin jar in {@code lib/}, one
 * networked fragstate node per JobManager/TaskManager JVM (failure domain per process, a cluster
 * key made per run with {@code fragstate keygen}) plus two standalone {@code fragstate node}
 * processes, and the same exactly-once check against the reference computation as scenario h.
 * The fragstate scenarios b, d and r with the Traffic Monitoring job, and f with the YSB job,
 * run in the quick tier, i.e. in {@code ci/test.sh}; a, c, e, f and g with the traffic job, a
 * with the YSB job and i in the full tier. Scenario a on the other Flink lines: {@link FlinkLinesIT}.
 */
class FragstateClusterRecoveryIT {

    @BeforeAll
    static void pluginBuilt() {
        assertThat(Artifacts.pluginJar(REPO)).as("plugin jar (built by java-bridge)").exists();
    }

    private static ScenarioRunner.Result run(Scenario s) throws Exception {
        return ScenarioChecks.runThroughFragstate(s);
    }

    /**
     * Scenario a (full tier since 2026-12-07, to keep CI under 45 minutes: scenario r, in the quick
     * tier, kills one TaskManager the same way on the README's lines and makes the same checks).
     */
    @Test
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    void scenarioA_fragstateCluster_killOneTaskManager_exactlyOnce() throws Exception {
        assertRecoveredFromOneKill(run(Scenario.fragstateKillOneTaskManager(REPO)));
    }

    /** What scenarios a and r check of the recovery from one TaskManager's kill -9. */
    private static void assertRecoveredFromOneKill(ScenarioRunner.Result r) throws IOException {
        RecoveryTimeline tl = r.timeline;
        assertThat(tl.killedTaskManagers).hasSize(1);
        assertThat(tl.statefulSubtasksOnKilled).as("the killed TaskManager ran stateful subtasks").isNotEmpty();
        assertThat(tl.restores).as("the job restored from a checkpoint").isGreaterThanOrEqualTo(1);
        assertThat(tl.killToRunningMs()).as("kill -> all subtasks RUNNING").isBetween(0L, 120_000L);
        assertThat(tl.subtasks).allSatisfy(s -> assertThat(s.initializingMs).isNotNegative());
        // the checkpoint went to fragstate, not to the harness' file:// directory
        Path plain = Path.of(r.runDir, "flink/checkpoints");
        assertThat(Files.exists(plain) && Files.list(plain).findAny().isPresent())
                .as("nothing written to the plain file:// checkpoint directory").isFalse();
    }

    /**
     * Scenario r: the README's lines on the distribution's stock config.yaml form a cluster (every
     * node bootstraps from the default /dns4/localhost/tcp/6130), the job checkpoints through it
     * and a kill -9 of one TaskManager is recovered with state fetched from peers.
     */
    @Test
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioR_readmeLinesOnStockConfig_formACluster_killOneTaskManager_exactlyOnce() throws Exception {
        Scenario scenario = Scenario.fragstateReadmeConfigKillOneTaskManager(REPO);
        assertThat(scenario.flinkConfig()).doesNotContainKeys("fragstate.bootstrap", "fragstate.listen")
                .containsEntry("fragstate.mode", "cluster").containsEntry("fragstate.failure-domain", "process");
        ScenarioRunner.Result r = run(scenario);
        assertRecoveredFromOneKill(r);
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Long>> perTm = (Map<String, Map<String, Long>>) (Map<String, ?>) r.fragstate.get("taskManagerMetrics");
        // every node found the others through the default bootstrap: JobManager + 6 live TaskManagers,
        // or + 7 when the REST metric store still holds a fetch from the seconds after the kill in which
        // SWIM had not yet declared the killed TaskManager dead (about 3 s; Flink's REST metrics are up to
        // metrics.fetcher.update-interval = 10 s old; CI of 2026-12-05 read 7, 8 and 8, every node having
        // logged "peer left" 3.3 s after the kill). A TaskManager without a task has registered no
        // fragstate metrics: an empty map.
        long expected = scenario.taskManagers();
        List<Long> live = perTm.values().stream().filter(m -> m.containsKey("liveNodes")).map(m -> m.get("liveNodes")).toList();
        assertThat(live).as("live storage nodes seen by the TaskManagers with tasks after the kill").isNotEmpty()
                .allSatisfy(n -> assertThat(n).isBetween(expected, expected + 1));
    }

    @Test
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioB_fragstateCluster_killTwoTaskManagersAtOnce_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateKillTwoTaskManagers(REPO));
        assertThat(r.timeline.killedTaskManagers).hasSize(2);
        assertThat(r.timeline.restores).isGreaterThanOrEqualTo(1);
    }

    /**
     * Scenario c (full tier since 2026-12-02, when the YSB job and the Flink 1.20 / 2.3 runs
     * joined the quick tier: CI stays under 45 minutes; the soak smoke of ci/test.sh kills a
     * TaskManager of a job that checkpoints every second, mostly while a checkpoint is in flight).
     */
    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioC_fragstateCluster_killDuringCheckpoint_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateKillDuringCheckpoint(REPO));
        assertThat(r.timeline.killedTaskManagers).hasSize(1);
        assertThat(r.timeline.restores).isGreaterThanOrEqualTo(1);
    }

    /**
     * Scenario f with the Traffic Monitoring job (full tier since 2026-12-02: the quick tier runs f
     * with the YSB job, {@link #ysbJob_scenariosAF_fragstateCluster_killOneTaskManager_exactlyOnce}).
     */
    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioF_rocksDbIncremental_killOneTaskManager_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateRocksDbIncrementalKillOneTaskManager(REPO));
        assertThat(r.timeline.killedTaskManagers).hasSize(1);
        assertThat(r.timeline.restores).isGreaterThanOrEqualTo(1);
    }

    /**
     * YSB f in both tiers; YSB a only in the full tier (since 2026-12-03, to keep CI under 45
     * minutes: scenario a with the traffic job kills a heap-state TaskManager, YSB f runs this job).
     */
    static Stream<Arguments> ysbScenarios() {
        Stream<Arguments> quick = Stream.of(
                Arguments.of("f: RocksDB incremental", (Function<Path, Scenario>) Scenario::fragstateRocksDbIncrementalKillOneTaskManager));
        if (!Boolean.getBoolean("fragstate.it.full")) {
            return quick;
        }
        return Stream.concat(Stream.of(
                Arguments.of("a: kill -9 one TaskManager", (Function<Path, Scenario>) Scenario::fragstateKillOneTaskManager)), quick);
    }

    /**
     * The Yahoo Streaming Benchmark job in scenarios a (full tier) and f: its state (Kafka offsets,
     * the campaign table in broadcast state, views waiting for their campaign, per-campaign window
     * counts, sink transactions) goes through fragstate and comes back after the kill, exactly once.
     */
    @ParameterizedTest(name = "YSB {0}")
    @MethodSource("ysbScenarios")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void ysbJob_scenariosAF_fragstateCluster_killOneTaskManager_exactlyOnce(String name, Function<Path, Scenario> scenario)
            throws Exception {
        ScenarioRunner.Result r = run(scenario.apply(REPO).running(Workload.YSB));
        assertThat(r.timeline.killedTaskManagers).hasSize(1);
        assertThat(r.timeline.statefulSubtasksOnKilled).as("the killed TaskManager counted campaign windows").isNotEmpty()
                .allSatisfy(s -> assertThat(s).contains("campaign-window-count"));
        assertThat(r.timeline.restores).isGreaterThanOrEqualTo(1);
    }

    @Test
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioD_fragstateCluster_restartWholeClusterFromDiskStores_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateRestartCluster(REPO));
        assertThat(r.timeline.restoredFrom).as("resumed from a checkpoint in fragstate").startsWith("fragstate://");
        assertThat(r.timeline.restoredCheckpointId).as("resumed from a retained checkpoint").isPositive();
    }

    /**
     * Scenario e (full tier since 2026-12-02, with c and f, to keep CI under 45 minutes once the
     * YSB job and the Flink 1.20 / 2.3 runs joined the quick tier).
     */
    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioE_fragstateCluster_stopWithSavepointRescale_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateSavepointRescale(REPO));
        assertThat(r.timeline.restoredFrom).as("the savepoint is in fragstate").startsWith("fragstate://");
        assertThat(r.timeline.restoredCheckpointId).as("resumed from the savepoint").isPositive();
        assertThat(r.timeline.subtasks).filteredOn(s -> s.vertex.contains("window")).hasSize(3);
    }

    /** Scenario i (full tier): adaptive mode on in every TaskManager; the kill is recovered exactly once. */
    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioI_adaptiveModeOn_killOneTaskManager_exactlyOnce() throws Exception {
        ScenarioRunner.Result r = run(Scenario.fragstateAdaptiveKillOneTaskManager(REPO));
        assertThat(r.timeline.killedTaskManagers).hasSize(1);
        assertThat(r.timeline.restores).isGreaterThanOrEqualTo(1);
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Long>> perTm = (Map<String, Map<String, Long>>) (Map<String, ?>) r.fragstate.get("taskManagerMetrics");
        // phases of 2 s over the checkpoints before and after the kill: some TaskManager decided several
        assertThat(perTm.values().stream().mapToLong(m -> m.getOrDefault("adaptivePhase", 0L)).max().orElse(0))
                .as("adaptive phases decided by the busiest TaskManager").isGreaterThanOrEqualTo(2);
    }

    /**
     * Scenario g (full tier since 2026-12-03, to keep CI under 45 minutes: the refusal itself, its
     * message naming the options, is tested in every build by java-bridge's
     * {@code ClusterModePlacementTest.tooFewStorageNodesFailTheJobNamingTheOptions}).
     */
    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 8, unit = TimeUnit.MINUTES)
    void scenarioG_wrongSetting_failsTheJobNamingTheSettingAndCommitsNothing() throws Exception {
        ScenarioRunner.RejectedConfigResult r;
        try (ScenarioRunner runner = new ScenarioRunner(Scenario.fragstateTooManyFragments(REPO), REPO)) {
            r = runner.runExpectingRejectedConfig(Duration.ofSeconds(60),
                    List.of("cannot place 8 fragments (k=6 + m=2)", "fragstate.data-fragments"));
        }
        assertThat(r.jobState).as("the job must not run degraded").isEqualTo("FAILED");
        assertThat(r.submissionRefused).as("flink run itself reports the refusal").isTrue();
        assertThat(r.completedCheckpoints).as("checkpoints completed with a setting the cluster cannot hold").isZero();
        assertThat(r.committedNotifications).as("output committed without a checkpoint").isZero();
        assertThat(r.matchingLogLines).as("a log line naming the setting and the numbers").isNotEmpty();
    }
}
