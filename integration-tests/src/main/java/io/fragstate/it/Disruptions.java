package io.fragstate.it;

import static io.fragstate.it.Report.step;
import static io.fragstate.it.Waits.waitFor;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a scenario does to the running job ({@link Scenario.Disruption}), and the recovery
 * timeline it records: {@code kill -9} of TaskManagers that run window subtasks (a, b, c, f, h),
 * a restart of the whole cluster with a resubmission from the retained checkpoint (d), and
 * stop-with-savepoint with a resubmission at another parallelism (e).
 */
final class Disruptions {
    private final Scenario scenario;
    private final ServiceStack stack;
    private final FlinkRest rest;

    /** For a started {@code stack}. */
    Disruptions(Scenario scenario, ServiceStack stack) {
        this.scenario = scenario;
        this.stack = stack;
        this.rest = stack.rest();
    }

    /**
     * Waits for the plan's moment (checkpoints completed, generator far enough), disrupts job
     * {@code jobId} and waits until the job runs again; returns the id of the job that runs then.
     */
    String disrupt(String jobId, RecoveryTimeline tl, AtomicInteger generatorSecond, CompletableFuture<?> generator)
            throws Exception {
        Scenario.Disruption plan = scenario.disruption();
        tl.kind = plan.kind().name();
        waitFor(plan.minCompletedCheckpoints() + " completed checkpoints and generator second " + plan.minGeneratorSecond(),
                Duration.ofSeconds(180), () -> {
                    if (generator.isDone()) {
                        generator.join(); // surfaces a generator failure
                        throw new IllegalStateException("the generator finished before the disruption: " + Waits.RUN_TOO_SHORT);
                    }
                    return rest.completedCheckpoints(jobId) >= plan.minCompletedCheckpoints()
                            && generatorSecond.get() >= plan.minGeneratorSecond();
                });
        switch (plan.kind()) {
            case KILL_TASKMANAGERS:
                killAndRecover(jobId, tl, plan, generatorSecond);
                return jobId;
            case RESTART_CLUSTER:
                return restartClusterAndResume(jobId, tl, generatorSecond);
            case SAVEPOINT_AND_RESCALE:
                return savepointAndRescale(jobId, tl, plan, generatorSecond);
            default:
                throw new IllegalStateException("unknown disruption " + plan.kind());
        }
    }

    /**
     * {@code kill -9} of {@code plan.taskManagers()} TaskManagers that run window subtasks, then
     * waits until the job has recovered and completed a checkpoint; fills {@code tl}.
     */
    void killAndRecover(String jobId, RecoveryTimeline tl, Scenario.Disruption plan, AtomicInteger generatorSecond)
            throws Exception {
        killAndAwaitRunning(jobId, tl, plan, generatorSecond);
        RecoveryWatch.awaitFirstCheckpoint(rest, jobId, tl, "a checkpoint after recovery", Duration.ofSeconds(60));
        step("recovered: " + tl.summary());
    }

    /**
     * {@link #killAndRecover} without waiting for a checkpoint after the recovery (with long
     * checkpoint intervals the next one may be minutes away): returns once every subtask of the
     * killed TaskManagers runs again elsewhere.
     */
    void killAndAwaitRunning(String jobId, RecoveryTimeline tl, Scenario.Disruption plan, AtomicInteger generatorSecond)
            throws Exception {
        String windowVertex = rest.vertexId(jobId, "window");
        JsonNode window = rest.get("/jobs/" + jobId + "/vertices/" + windowVertex);
        List<String> victims = new ArrayList<>(rest.taskManagersOf(jobId, windowVertex));
        if (victims.size() < plan.taskManagers()) {
            throw new IllegalStateException("only " + victims.size() + " TaskManagers run window subtasks; cannot kill "
                    + plan.taskManagers());
        }
        victims = victims.subList(0, plan.taskManagers());
        for (JsonNode s : window.path("subtasks")) {
            if (victims.contains(s.path("taskmanager-id").asText())) {
                tl.statefulSubtasksOnKilled.add(window.path("name").asText("window") + "#" + s.path("subtask").asInt());
            }
        }
        List<Long> pids = new ArrayList<>();
        for (String tm : victims) {
            pids.add(stack.taskManagerPid(tm));
        }
        RecoveryWatch watch = new RecoveryWatch(rest, jobId, victims);
        if (plan.trigger() == Scenario.Trigger.DURING_CHECKPOINT) {
            // everything else is prepared: kill as soon as a checkpoint is seen in progress
            waitFor("a checkpoint in progress", Duration.ofSeconds(60),
                    () -> rest.checkpoints(jobId).path("counts").path("in_progress").asInt() > 0);
        }
        tl.killAtMs = System.currentTimeMillis();
        stack.kill9(pids);
        tl.killedTaskManagers.addAll(victims);
        tl.killedPids.addAll(pids);
        step("kill -9 " + victims + " (pids " + pids + "), generator at second " + generatorSecond.get()
                + ", stateful subtasks lost: " + tl.statefulSubtasksOnKilled);

        watch.awaitRecovered(tl, Duration.ofSeconds(180));
    }

    /**
     * Scenario d: the whole cluster goes down (every JVM gets SIGTERM, the JobManager suspends
     * the job; in cluster mode the standalone fragstate nodes stop too, so every fragment is only
     * on disk), comes back on the same ports, and the job is resubmitted from the latest retained
     * checkpoint, the way an operator would: for fragstate, found with {@code fragstate ls}.
     */
    private String restartClusterAndResume(String oldJob, RecoveryTimeline tl, AtomicInteger generatorSecond)
            throws Exception {
        tl.killAtMs = System.currentTimeMillis();
        step("stopping the whole cluster (generator at second " + generatorSecond.get() + ")");
        stack.stopCluster();
        tl.phases.put("cluster stopped", System.currentTimeMillis() - tl.killAtMs);
        stack.startClusterAgain();
        tl.phases.put("cluster started", System.currentTimeMillis() - tl.killAtMs);
        String checkpoint = scenario.fragstateCluster()
                ? latestRetainedFragstateCheckpoint(oldJob)
                : latestRetainedCheckpoint(oldJob).toUri().toString();
        tl.restoredFrom = checkpoint;
        String jobId = stack.submitJob(scenario.parallelism(), checkpoint);
        tl.phases.put("job resubmitted", System.currentTimeMillis() - tl.killAtMs);
        step("resubmitted as job " + jobId + " from " + checkpoint);
        awaitFreshJob(jobId, tl);
        return jobId;
    }

    /**
     * Scenario e: stop the job with a savepoint, resubmit from the savepoint at another
     * parallelism. Stop-with-savepoint (not "savepoint, then cancel"): a periodic checkpoint that
     * completes between a plain savepoint and the cancel commits output beyond the savepoint,
     * and restarting from the savepoint then duplicates it (seen here: 135 duplicates).
     */
    private String savepointAndRescale(String oldJob, RecoveryTimeline tl, Scenario.Disruption plan,
            AtomicInteger generatorSecond) throws Exception {
        tl.killAtMs = System.currentTimeMillis();
        step("stop with savepoint of job " + oldJob + " (generator at second " + generatorSecond.get() + ")");
        String target = scenario.fragstateCluster()
                ? fragstateCheckpointDir().replaceAll("/[^/]*$", "/savepoints")
                : stack.flinkDir().resolve("savepoints").toUri().toString();
        String out = stack.stopWithSavepoint(target, oldJob);
        Matcher m = Pattern.compile("Path: (\\S+)").matcher(out);
        if (!m.find()) {
            throw new IllegalStateException("flink stop printed no savepoint path:\n" + Shell.tail(out, 3000));
        }
        String savepoint = m.group(1);
        tl.restoredFrom = savepoint;
        waitFor("job " + oldJob + " stopped", Duration.ofSeconds(60),
                () -> "FINISHED".equals(rest.job(oldJob).path("state").asText()));
        tl.phases.put("stopped with savepoint", System.currentTimeMillis() - tl.killAtMs);
        String jobId = stack.submitJob(plan.newParallelism(), savepoint);
        tl.phases.put("job resubmitted", System.currentTimeMillis() - tl.killAtMs);
        step("resubmitted as job " + jobId + " at parallelism " + plan.newParallelism() + " from " + savepoint);
        awaitFreshJob(jobId, tl);
        return jobId;
    }

    /** Waits until the resubmitted job runs fully, then records its restore and startup timeline. */
    private void awaitFreshJob(String jobId, RecoveryTimeline tl) throws Exception {
        waitFor("job " + jobId + " running after restore", Duration.ofSeconds(180), () -> rest.allRunning(jobId)
                && rest.checkpoints(jobId).path("latest").path("restored").path("id").asLong(-1) >= 0);
        JsonNode cps = rest.checkpoints(jobId);
        tl.restores = cps.path("counts").path("restored").asLong();
        RecoveryWatch.recordRestore(tl, cps);
        tl.collectSubtasks(rest, jobId, Set.of("window"));
        RecoveryWatch.awaitFirstCheckpoint(rest, jobId, tl, "a checkpoint after the restart", Duration.ofSeconds(60));
        step("running again: " + tl.summary());
    }



    /** {@code fragstate.checkpoint-dir} of this run (the plugin's default when the scenario leaves it unset). */
    private String fragstateCheckpointDir() {
        return scenario.flinkConfig().getOrDefault("fragstate.checkpoint-dir", "fragstate://flink/checkpoints");
    }

    /**
     * The newest {@code chk-N} of the job in fragstate that has its {@code _metadata}, listed with
     * {@code fragstate ls} once every storage node (JobManager, TaskManagers, standalone) is back.
     */
    private String latestRetainedFragstateCheckpoint(String job) {
        String dir = fragstateCheckpointDir() + "/" + job + "/";
        int nodes = 1 + scenario.taskManagers() + scenario.fragstateNodes();
        String listing = stack.fragstateList(dir, nodes);
        Matcher m = Pattern.compile(Pattern.quote(dir) + "chk-(\\d+)/_metadata$", Pattern.MULTILINE).matcher(listing);
        long best = -1;
        while (m.find()) {
            best = Math.max(best, Long.parseLong(m.group(1)));
        }
        if (best < 0) {
            throw new IllegalStateException("no retained checkpoint with _metadata under " + dir + " in:\n" + Shell.tail(listing, 3000));
        }
        return dir + "chk-" + best;
    }

    /** The newest {@code chk-N} of the job that has its {@code _metadata}. */
    private Path latestRetainedCheckpoint(String job) throws IOException {
        Path dir = stack.flinkDir().resolve("checkpoints").resolve(job);
        Path best = null;
        long bestN = -1;
        if (Files.isDirectory(dir)) {
            try (var list = Files.list(dir)) {
                for (Path p : (Iterable<Path>) list::iterator) {
                    String name = p.getFileName().toString();
                    if (name.startsWith("chk-") && Files.exists(p.resolve("_metadata"))) {
                        long n = Long.parseLong(name.substring(4));
                        if (n > bestN) {
                            bestN = n;
                            best = p;
                        }
                    }
                }
            }
        }
        if (best == null) {
            throw new IllegalStateException("no retained checkpoint with _metadata under " + dir
                    + " (is execution.checkpointing.externalized-checkpoint-retention set to RETAIN_ON_CANCELLATION?)");
        }
        return best;
    }
}
