package io.fragstate.it;

import io.fragstate.generator.GeneratorConfig;
import io.fragstate.generator.RateProfile;
import io.fragstate.generator.RoadGraph;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One recovery scenario of issue 5. Scenarios differ only in data: the {@code config.yaml} lines
 * that replace the harness' base settings, the jars dropped into Flink's {@code lib/} (the
 * fragstate plugin jar for scenarios a-g), the {@link Disruption}, the {@link Workload} (which job,
 * its input and reference) and the Flink release. Everything else (Kafka, cluster, generator,
 * exact output check, timeline) is the same {@link ScenarioRunner}.
 *
 * @param id            short name, used for the run directory and the results file
 * @param description   one line for logs and the results file
 * @param flinkConfig   flat {@code key: value} settings replacing the base ones in config.yaml
 * @param libJars       jars copied into the per-run Flink {@code lib/}
 * @param taskManagers  TaskManager JVMs (2 slots each)
 * @param parallelism   job parallelism (leave spare slots so a killed TaskManager's work fits elsewhere)
 * @param checkpointIntervalMs checkpoint interval passed to the job
 * @param simulation    generator parameters (they also define the expected output)
 * @param disruption    what happens to the running job, and when
 * @param fragstateNodes for {@code fragstate.mode: cluster}: standalone {@code fragstate node} storage
 *                      processes the harness starts beside the cluster (the bootstrap address of every
 *                      Flink JVM's node, and headroom); 0 otherwise
 * @param stockFlinkConfig true: config.yaml is the distribution's own, as shipped, with {@code flinkConfig}
 *                      appended (no harness base settings, fixed ports 6123/8081, and in cluster mode no
 *                      {@code fragstate.listen}/{@code fragstate.bootstrap}: the plugin's defaults)
 * @param workload      the job, its input and its reference computation
 * @param flinkVersion  the Flink release of the cluster ({@code ci/lib/fetch-flink.sh} fetches it), or
 *                      null for the default (2.2.1)
 * @param jobJar        the job jar to submit, or null for the workload's own ({@link Workload#jobJar})
 */
public record Scenario(String id, String description, Map<String, String> flinkConfig, List<Path> libJars,
        int taskManagers, int parallelism, long checkpointIntervalMs, Simulation simulation, Disruption disruption,
        int fragstateNodes, boolean stockFlinkConfig, Workload workload, String flinkVersion, Path jobJar) {

    /** A Traffic Monitoring scenario. */
    public Scenario(String id, String description, Map<String, String> flinkConfig, List<Path> libJars,
            int taskManagers, int parallelism, long checkpointIntervalMs, Simulation simulation, Disruption disruption,
            int fragstateNodes, boolean stockFlinkConfig) {
        this(id, description, flinkConfig, libJars, taskManagers, parallelism, checkpointIntervalMs, simulation,
                disruption, fragstateNodes, stockFlinkConfig, Workload.TRAFFIC, null, null);
    }

    /** This scenario with another job and its {@link Workload#defaultSimulation}; id and description say which. */
    public Scenario running(Workload other) {
        return new Scenario(other.name() + "-" + id, other.name() + " job: " + description, flinkConfig, libJars,
                taskManagers, parallelism, checkpointIntervalMs, other.defaultSimulation(), disruption, fragstateNodes,
                stockFlinkConfig, other, flinkVersion, null);
    }

    /**
     * This scenario on a cluster of Flink {@code version} (the same plugin jar), submitting {@code
     * jobJar} (a job is built against the Flink it runs on: null keeps the workload's own jar).
     */
    public Scenario onFlink(String version, Path jobJar) {
        return new Scenario("flink-" + version + "-" + id, "Flink " + version + ": " + description, flinkConfig, libJars,
                taskManagers, parallelism, checkpointIntervalMs, simulation, disruption, fragstateNodes, stockFlinkConfig,
                workload, version, jobJar);
    }

    /** The job jar to submit. */
    public Path jobJar(Path repo) {
        return jobJar != null ? jobJar : workload.jobJar(repo);
    }

    /** A scenario on the harness' base settings. */
    public Scenario(String id, String description, Map<String, String> flinkConfig, List<Path> libJars,
            int taskManagers, int parallelism, long checkpointIntervalMs, Simulation simulation, Disruption disruption,
            int fragstateNodes) {
        this(id, description, flinkConfig, libJars, taskManagers, parallelism, checkpointIntervalMs, simulation,
                disruption, fragstateNodes, false);
    }

    /** A scenario without standalone fragstate nodes. */
    public Scenario(String id, String description, Map<String, String> flinkConfig, List<Path> libJars,
            int taskManagers, int parallelism, long checkpointIntervalMs, Simulation simulation, Disruption disruption) {
        this(id, description, flinkConfig, libJars, taskManagers, parallelism, checkpointIntervalMs, simulation,
                disruption, 0);
    }

    /** True when the Flink JVMs run networked fragstate nodes (the harness then makes a cluster key). */
    public boolean fragstateCluster() {
        return "cluster".equalsIgnoreCase(flinkConfig.getOrDefault("fragstate.mode", "").strip());
    }

    /**
     * The generator's parameters; {@code speedup} = simulated seconds per wall-clock second;
     * {@code scale} multiplies the rate profile (traffic: active vehicles, YSB: ad events per second).
     *
     * @param profile            {@code null}: the generator's built-in rate profile; else a profile
     *                           file or {@code daedalus} ({@link RateProfile#read})
     * @param profileCompression the profile's time axis squeezed this many times ({@link RateProfile#compressed})
     */
    public record Simulation(long seed, double scale, int durationSeconds, double speedup, String profile,
            int profileCompression) {
        public Simulation(long seed, double scale, int durationSeconds, double speedup) {
            this(seed, scale, durationSeconds, speedup, null, 1);
        }

        /** What the traffic simulation and its reference computation run with. */
        public GeneratorConfig generatorConfig() {
            if (profile == null) {
                return GeneratorConfig.defaults(seed, scale, durationSeconds);
            }
            try {
                RateProfile rates = RateProfile.read(Path.of(profile)).compressed(profileCompression);
                return new GeneratorConfig(seed, scale, durationSeconds, GeneratorConfig.DEFAULT_START_EPOCH_MS,
                        RoadGraph.builtIn(), rates);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the rate profile " + profile + ": " + e.getMessage(), e);
            }
        }
    }

    /** What is done to the running job. */
    public enum Kind {
        /** {@code kill -9} of TaskManagers that run stateful subtasks (scenarios a, b, c, f, h) */
        KILL_TASKMANAGERS,
        /** stop the whole cluster, start it again, resubmit from the latest retained checkpoint (d) */
        RESTART_CLUSTER,
        /**
         * stop the job with a savepoint ({@code flink stop}), resubmit from it at
         * {@link Disruption#newParallelism} (e). Not "savepoint, then cancel": checkpoints completing
         * in between commit output past the savepoint, which a restore from it then repeats.
         */
        SAVEPOINT_AND_RESCALE
    }

    /** When the disruption happens. */
    public enum Trigger {
        /** after {@link Disruption#minCompletedCheckpoints} checkpoints and generator second {@link Disruption#minGeneratorSecond} */
        AFTER_CHECKPOINTS,
        /** like AFTER_CHECKPOINTS, then as soon as a checkpoint is seen in progress */
        DURING_CHECKPOINT
    }

    /**
     * @param taskManagers  for KILL_TASKMANAGERS: how many are killed at once (each runs a window subtask)
     * @param newParallelism for SAVEPOINT_AND_RESCALE: parallelism of the resubmitted job
     */
    public record Disruption(Kind kind, int taskManagers, Trigger trigger, int minCompletedCheckpoints,
            int minGeneratorSecond, int newParallelism) {

        public static Disruption killTaskManagers(int count, Trigger trigger) {
            return new Disruption(Kind.KILL_TASKMANAGERS, count, trigger, 3, 30, 0);
        }

        public static Disruption restartCluster() {
            return new Disruption(Kind.RESTART_CLUSTER, 0, Trigger.AFTER_CHECKPOINTS, 3, 30, 0);
        }

        public static Disruption savepointAndRescale(int newParallelism) {
            return new Disruption(Kind.SAVEPOINT_AND_RESCALE, 0, Trigger.AFTER_CHECKPOINTS, 3, 30, newParallelism);
        }
    }

    /** The plain-Flink settings: HashMap state backend, checkpoints on the local file system. */
    public static Map<String, String> plainFlinkConfig() {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("state.backend.type", "hashmap");
        config.put("execution.checkpointing.storage", "filesystem");
        return config;
    }

    /** The default workload: ~130-150 active vehicles, 90 simulated seconds in 60 s. */
    public static Simulation defaultSimulation() {
        return new Simulation(42, 0.2, 90, 1.5);
    }

    /**
     * Scenario h: plain Flink (HashMap state backend, {@code file://} checkpoints: the harness'
     * base config), one TaskManager killed with {@code kill -9} after a few checkpoints. It is the
     * reference that the harness itself is right.
     */
    public static Scenario plainFlinkKillOneTaskManager() {
        return new Scenario("h-plain-flink-kill-one-tm",
                "plain Flink: hashmap + file:// checkpoints, kill -9 one TaskManager with stateful subtasks",
                plainFlinkConfig(), List.of(), 4, 4, 2_000, defaultSimulation(),
                Disruption.killTaskManagers(1, Trigger.AFTER_CHECKPOINTS));
    }

    /** Harness check for scenario d: plain Flink, whole cluster stopped and restarted, resume from the retained checkpoint. */
    public static Scenario plainFlinkRestartCluster() {
        Map<String, String> config = plainFlinkConfig();
        config.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        return new Scenario("d-plain-flink-restart-cluster",
                "plain Flink: stop the whole cluster, start it again, resume from the retained checkpoint",
                config, List.of(), 4, 4, 2_000, defaultSimulation(), Disruption.restartCluster());
    }

    /** Harness check for scenario e: plain Flink, stop with savepoint, resubmit at parallelism 3. */
    public static Scenario plainFlinkSavepointRescale() {
        return new Scenario("e-plain-flink-savepoint-rescale",
                "plain Flink: stop with savepoint, restart from the savepoint at parallelism 3",
                plainFlinkConfig(), List.of(), 4, 4, 2_000, defaultSimulation(), Disruption.savepointAndRescale(3));
    }

    /**
     * The fragstate settings of the cluster-mode scenarios: the plugin as state backend (HashMap
     * working state), networked nodes, RS(2,2) and one failure domain per process. Key file,
     * bootstrap and listen address are added per run by the harness.
     *
     * <p>Why k = 2, m = 2 and two standalone nodes: storage nodes are the JobManager, 4
     * TaskManagers and the 2 standalone nodes = 7; a writer excludes itself (6 left), so k + m = 4
     * still fits after two TaskManagers die at once (4 left), and any 2 of the 4 fragments rebuild
     * an object, so the loss of m = 2 holders is survived.
     */
    public static Map<String, String> fragstateClusterConfig() {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("state.backend.type", "io.fragstate.flink.FragstateStateBackendFactory");
        config.put("fragstate.mode", "cluster");
        config.put("fragstate.failure-domain", "process");
        config.put("fragstate.data-fragments", "2");
        config.put("fragstate.parity-fragments", "2");
        config.put("fragstate.cell-size", "64 kb");
        // Flink inlines state below this size into the checkpoint's _metadata (default 20 KB), which
        // only the JobManager writes and reads: 0 puts every subtask's state into its own
        // fragstate file, so a restored TaskManager really fetches fragments from its peers.
        config.put("execution.checkpointing.data-inline-threshold", "0 b");
        // the fragstate.* metrics are read over REST right after recovery (default cache: 10 s)
        config.put("metrics.fetcher.update-interval", "1000");
        return config;
    }

    /**
     * A fragstate cluster-mode scenario: the plugin jar in {@code lib/}, 4 TaskManagers,
     * parallelism 4, checkpoints every 2 s, the default simulation and 2 standalone fragstate nodes.
     */
    private static Scenario fragstateScenario(String id, String description, Map<String, String> config, Path repo,
            Disruption disruption) {
        return new Scenario(id, description, config, List.of(Artifacts.pluginJar(repo)), 4, 4, 2_000, defaultSimulation(), disruption, 2);
    }

    /** Replaced by the run's directory in a scenario's Flink config values. */
    public static final String RUN_DIR = "${run.dir}";

    /**
     * Scenario d: fragstate with disk-backed stores ({@code fragstate.store.dir}: every Flink
     * process claims a {@code node-N} below it); the whole cluster, standalone fragstate nodes
     * included, is stopped and started again, and the job resumes from its retained checkpoint.
     */
    public static Scenario fragstateRestartCluster(Path repo) {
        Map<String, String> config = fragstateClusterConfig();
        config.put("fragstate.store.dir", RUN_DIR + "/fragstate/flink-stores");
        config.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        return fragstateScenario("d-fragstate-restart-cluster",
                "fragstate cluster mode, disk stores: stop the whole cluster and every fragstate node, start them again, resume from the retained checkpoint",
                config, repo, Disruption.restartCluster());
    }

    /** Scenario e: fragstate; stop with a savepoint (to fragstate://), resubmit at parallelism 3. */
    public static Scenario fragstateSavepointRescale(Path repo) {
        return fragstateScenario("e-fragstate-savepoint-rescale",
                "fragstate cluster mode: stop with savepoint to fragstate://, restart from it at parallelism 3",
                fragstateClusterConfig(), repo,
                Disruption.savepointAndRescale(3));
    }

    /** Scenario a: fragstate in cluster mode, one TaskManager killed with {@code kill -9} after a few checkpoints. */
    public static Scenario fragstateKillOneTaskManager(Path repo) {
        return fragstateScenario("a-fragstate-kill-one-tm",
                "fragstate cluster mode, RS(2,2), failure domain per process: kill -9 one TaskManager with stateful subtasks",
                fragstateClusterConfig(), repo,
                Disruption.killTaskManagers(1, Trigger.AFTER_CHECKPOINTS));
    }

    /**
     * Scenario r: what a user gets from the README. config.yaml is the Flink distribution's own as
     * shipped ({@code jobmanager.rpc.address: localhost}, 1 slot per TaskManager) plus exactly the
     * lines of README.md "Use it with Flink" ({@link ReadmeConfig}: the plugin as state backend,
     * {@code fragstate.mode: cluster}, the key file — its path replaced by this run's key — and the
     * documented single-host line {@code fragstate.failure-domain: process}); no
     * {@code fragstate.listen}, no {@code fragstate.bootstrap}, no standalone nodes: every node
     * bootstraps from the default {@code /dns4/localhost/tcp/6130}. The default coding RS(4,2) needs
     * 6 nodes besides the writer, also after a TaskManager is killed: JobManager + 7 TaskManagers,
     * the README's k + m + 1. One line is the harness's, not the README's:
     * {@code execution.checkpointing.data-inline-threshold: 0 b}, so that the restore really fetches
     * fragments (Flink would inline this job's small states into {@code _metadata}).
     */
    public static Scenario fragstateReadmeConfigKillOneTaskManager(Path repo) {
        Map<String, String> config = ReadmeConfig.flinkLines(repo);
        config.put("execution.checkpointing.data-inline-threshold", "0 b");
        int taskManagers = ReadmeConfig.singleHostTaskManagers(config);
        return new Scenario("r-fragstate-readme-config-kill-one-tm",
                "stock Flink config.yaml + the README's fragstate lines (default bootstrap /dns4/localhost/tcp/6130, RS(4,2)): kill -9 one TaskManager",
                config, List.of(Artifacts.pluginJar(repo)), taskManagers, 4, 2_000, defaultSimulation(),
                Disruption.killTaskManagers(1, Trigger.AFTER_CHECKPOINTS), 0, true);
    }

    /**
     * Scenario i: scenario a with adaptive mode on — the default since 2026-12-02, set here so the
     * scenario keeps its meaning — and a 2 s phase, so every TaskManager decides several phases
     * before the kill (full tier). This job's states are kilobytes: no upload reaches
     * the 256 KiB a measurement needs, so the decisions keep the configured RS(2,2) and say why —
     * what is checked is that adaptive mode runs inside real TaskManagers without changing the
     * outcome (its effect on restores is measured by ci/bench-adaptive.sh).
     */
    public static Scenario fragstateAdaptiveKillOneTaskManager(Path repo) {
        Map<String, String> config = fragstateClusterConfig();
        config.put("fragstate.adaptive", "on");
        config.put("fragstate.adaptive.phase", "2 s");
        return fragstateScenario("i-fragstate-adaptive-kill-one-tm",
                "fragstate cluster mode, RS(2,2), adaptive mode on (2 s phases): kill -9 one TaskManager with stateful subtasks",
                config, repo, Disruption.killTaskManagers(1, Trigger.AFTER_CHECKPOINTS));
    }

    /** Scenario b: two TaskManagers with stateful subtasks killed at once; m = 2 fragments of every object may be lost. */
    public static Scenario fragstateKillTwoTaskManagers(Path repo) {
        return fragstateScenario("b-fragstate-kill-two-tms",
                "fragstate cluster mode, RS(2,2): kill -9 two TaskManagers with stateful subtasks at once",
                fragstateClusterConfig(), repo,
                Disruption.killTaskManagers(2, Trigger.AFTER_CHECKPOINTS));
    }

    /** Scenario c: one TaskManager killed while a checkpoint is in progress (its fragments half written). */
    public static Scenario fragstateKillDuringCheckpoint(Path repo) {
        return fragstateScenario("c-fragstate-kill-during-checkpoint",
                "fragstate cluster mode, RS(2,2): kill -9 one TaskManager while a checkpoint is in progress",
                fragstateClusterConfig(), repo,
                Disruption.killTaskManagers(1, Trigger.DURING_CHECKPOINT));
    }

    /** Scenario f: RocksDB working state with incremental checkpoints on fragstate, then scenario a. */
    public static Scenario fragstateRocksDbIncrementalKillOneTaskManager(Path repo) {
        Map<String, String> config = fragstateClusterConfig();
        config.put("fragstate.local-backend", "rocksdb");
        config.put("execution.checkpointing.incremental", "true");
        return fragstateScenario("f-fragstate-rocksdb-incremental-kill-one-tm",
                "fragstate cluster mode, RS(2,2), RocksDB + incremental checkpoints: kill -9 one TaskManager",
                config, repo,
                Disruption.killTaskManagers(1, Trigger.AFTER_CHECKPOINTS));
    }

    /**
     * The cluster of the soak and the interval evaluation: the README's fragstate lines (the run's
     * cluster key replaces the README's example path), RocksDB with incremental checkpoints, disk
     * stores in every Flink process, and every subtask's state in its own fragstate object.
     */
    private static Map<String, String> readmeRocksDbConfig(Path repo) {
        Map<String, String> config = ReadmeConfig.flinkLines(repo);
        config.remove("fragstate.cluster-key-file"); // the harness sets this run's key
        config.put("fragstate.local-backend", "rocksdb");
        config.put("execution.checkpointing.incremental", "true");
        config.put("fragstate.store.dir", RUN_DIR + "/fragstate/flink-stores");
        // Flink inlines state below 20 KB into _metadata, which only the JobManager reads
        config.put("execution.checkpointing.data-inline-threshold", "0 b");
        return config;
    }

    /**
     * The soak of {@code ci/soak.sh} (issue 10): the README's fragstate lines ({@link ReadmeConfig};
     * the run's cluster key replaces the README's example path, and as in every non-stock scenario
     * the nodes listen on ephemeral ports and bootstrap from 2 standalone nodes, so a soak can run
     * beside scenario r), RS(4,2) as the README's defaults, RocksDB with incremental checkpoints,
     * disk stores in every Flink process (so every node's open-file bound is exercised), a
     * checkpoint every second, and the generator feeding the job for the plan's minutes. RS(4,2)
     * needs 6 nodes besides a writer also while a killed TaskManager is down: JobManager + (T - 1)
     * TaskManagers + 2 standalone nodes - the writer = T + 1 >= 6, so T >= 5.
     */
    static Scenario soak(Path repo, SoakPlan plan) {
        Map<String, String> config = readmeRocksDbConfig(repo);
        // the sampler reads checkpoint durations from the history every few seconds
        config.put("web.checkpoints.history", "60");
        double speedup = 1.5;
        Simulation sim = new Simulation(42, 0.2, (int) Math.ceil(plan.minutes() * 60 * speedup), speedup);
        return new Scenario("soak-" + plan.minutes() + "min",
                "soak: README config, RS(4,2), RocksDB incremental, 1 s checkpoints, " + plan.minutes()
                        + " min, kill -9 of a TaskManager every " + plan.killEvery().toSeconds() + " s",
                config, List.of(Artifacts.pluginJar(repo)), plan.taskManagers(), plan.parallelism(), 1_000, sim,
                Disruption.killTaskManagers(1, Trigger.AFTER_CHECKPOINTS), plan.standaloneNodes());
    }

    /**
     * A run of the checkpoint-interval evaluation ({@code ci/tune-eval.sh}, issue 15): the soak's
     * cluster (README lines, RS(4,2), RocksDB incremental, disk stores, 2 standalone nodes) with
     * the Daedalus profile compressed to the plan's minutes, events at their simulated pace
     * (speedup 1), and checkpoints every {@link TuneEvalPlan#configuredIntervalS} seconds.
     * RS(4,2) needs 6 nodes besides a writer while a killed TaskManager is down: JobManager + (T -
     * 1) + 2 standalone - the writer = T + 1, so T >= 5.
     */
    static Scenario tuneEval(Path repo, TuneEvalPlan plan) {
        Map<String, String> config = readmeRocksDbConfig(repo);
        config.put("web.checkpoints.history", "100");
        Simulation sim = new Simulation(42, plan.scale(), plan.durationSeconds(), 1.0, RateProfile.DAEDALUS, plan.compression());
        String name = plan.mode().equals(TuneEvalPlan.FIXED) ? "fixed-" + plan.fixedIntervalS() + "s" : plan.mode();
        return new Scenario("tune-" + name, "checkpoint-interval evaluation: " + plan.describe(), config,
                List.of(Artifacts.pluginJar(repo)), plan.taskManagers(), plan.parallelism(),
                plan.configuredIntervalS() * 1000, sim, Disruption.killTaskManagers(1, Trigger.AFTER_CHECKPOINTS), 2);
    }

    /**
     * Scenario g: a setting the cluster cannot satisfy: k + m = 6 + 2 = 8 fragments per object, but
     * a writer sees at most 6 other storage nodes (JobManager, 4 TaskManagers, 2 standalone nodes,
     * minus itself). The JobManager refuses the job when it sets up its checkpoint storage, after
     * {@code fragstate.storage-wait}, with an error naming the settings; the job fails instead of
     * running degraded (no checkpoint completes, nothing is committed).
     */
    public static Scenario fragstateTooManyFragments(Path repo) {
        Map<String, String> config = fragstateClusterConfig();
        config.put("fragstate.data-fragments", "6");
        config.put("fragstate.parity-fragments", "2");
        config.put("fragstate.storage-wait", "10 s");
        return fragstateScenario("g-fragstate-too-many-fragments",
                "fragstate cluster mode with k + m = 8 fragments on 7 storage nodes: the job must fail at start naming the settings, nothing committed",
                config, repo,
                Disruption.killTaskManagers(0, Trigger.AFTER_CHECKPOINTS));
    }
}
