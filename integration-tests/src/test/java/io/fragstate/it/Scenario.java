package io.fragstate.it;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One recovery scenario of issue 5. Scenarios differ only in data: the {@code config.yaml} lines
 * that replace the harness' base settings, the jars dropped into Flink's {@code lib/} (the
 * fragstate plugin jar for scenarios a-g), and the kill pattern. Everything else (Kafka, cluster,
 * generator, job, exact output check, timeline) is the same {@link ScenarioRunner}.
 *
 * @param id            short name, used for the run directory and the results file
 * @param description   one line for logs and the results file
 * @param flinkConfig   flat {@code key: value} settings replacing the base ones in config.yaml
 * @param libJars       jars copied into the per-run Flink {@code lib/}
 * @param taskManagers  TaskManager JVMs (2 slots each)
 * @param parallelism   job parallelism (leave spare slots so a killed TaskManager's work fits elsewhere)
 * @param checkpointIntervalMs checkpoint interval passed to the job
 * @param simulation    generator parameters (they also define the expected output)
 * @param kill          what is killed, and when
 */
public record Scenario(String id, String description, Map<String, String> flinkConfig, List<Path> libJars,
        int taskManagers, int parallelism, long checkpointIntervalMs, Simulation simulation, KillPlan kill) {

    /** Generator parameters; {@code speedup} = simulated seconds per wall-clock second. */
    public record Simulation(long seed, double scale, int durationSeconds, double speedup) {}

    /** When the kill happens. */
    public enum Trigger {
        /** after {@link KillPlan#minCompletedCheckpoints} checkpoints completed and the generator is past {@link KillPlan#minGeneratorSecond} */
        AFTER_CHECKPOINTS,
        /** like AFTER_CHECKPOINTS, but only while a checkpoint is in progress */
        DURING_CHECKPOINT
    }

    /**
     * @param taskManagers how many TaskManagers are killed at once with SIGKILL (each runs a stateful window subtask)
     */
    public record KillPlan(int taskManagers, Trigger trigger, int minCompletedCheckpoints, int minGeneratorSecond) {}

    /**
     * Scenario h: plain Flink (HashMap state backend, {@code file://} checkpoints: the harness'
     * base config), one TaskManager killed with {@code kill -9} after a few checkpoints. It is the
     * reference that the harness itself is right.
     */
    public static Scenario plainFlinkKillOneTaskManager() {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("state.backend.type", "hashmap");
        config.put("execution.checkpointing.storage", "filesystem");
        return new Scenario("h-plain-flink-kill-one-tm",
                "plain Flink: hashmap + file:// checkpoints, kill -9 one TaskManager with stateful subtasks",
                config, List.of(), 4, 4, 2_000,
                new Simulation(42, 0.2, 90, 1.5),
                new KillPlan(1, Trigger.AFTER_CHECKPOINTS, 3, 30));
    }
}
