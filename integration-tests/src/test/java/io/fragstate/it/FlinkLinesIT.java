package io.fragstate.it;

import static io.fragstate.it.ScenarioChecks.REPO;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Scenario a on the other Flink lines, with the one plugin jar: a real Flink 1.20 LTS cluster and
 * a real Flink 2.3 cluster from PyPI, fragstate in cluster mode, {@code kill -9} of a TaskManager
 * with stateful subtasks, exactly-once output. The Traffic Monitoring job is built against the
 * Flink it runs on (1.20: {@code flink-lines/flink-1.20-traffic-monitoring}, with the 1.20 line's
 * Kafka connector; 2.3: the default 2.2 build, whose connector also runs on 2.3). Flink's own
 * suites on each line: {@code flink-lines/flink-*-suites}, in every build. The 1.20 run is in the
 * quick tier; the 2.3 run in the full tier since 2026-12-03 (to keep CI under 45 minutes: the 2.x
 * line runs the plugin in every other scenario, and the 2.3 suites run in every build).
 */
class FlinkLinesIT {

    private static void assertRecoveredOn(String version, ScenarioRunner.Result r) {
        assertThat(r.flinkVersion).as("the cluster's own version (REST /config)").isEqualTo(version);
        assertThat(r.timeline.killedTaskManagers).hasSize(1);
        assertThat(r.timeline.statefulSubtasksOnKilled).as("the killed TaskManager ran stateful subtasks").isNotEmpty();
        assertThat(r.timeline.restores).as("the job restored from a checkpoint").isGreaterThanOrEqualTo(1);
    }

    @Test
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioA_onFlink120_samePluginJar_killOneTaskManager_exactlyOnce() throws Exception {
        String version = Artifacts.flinkLtsVersion();
        assertThat(version).startsWith("1.20.");
        Scenario s = Scenario.fragstateKillOneTaskManager(REPO).onFlink(version, Artifacts.ltsJobJar(REPO));
        assertRecoveredOn(version, ScenarioChecks.runThroughFragstate(s));
    }

    @Test
    @EnabledIfSystemProperty(named = "fragstate.it.full", matches = "true")
    @Timeout(value = 12, unit = TimeUnit.MINUTES)
    void scenarioA_onFlink23_samePluginJar_killOneTaskManager_exactlyOnce() throws Exception {
        String version = Artifacts.flinkNextVersion();
        assertThat(version).startsWith("2.3.");
        Scenario s = Scenario.fragstateKillOneTaskManager(REPO).onFlink(version, null);
        assertRecoveredOn(version, ScenarioChecks.runThroughFragstate(s));
    }
}
