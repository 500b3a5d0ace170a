package io.fragstate.it;

import static io.fragstate.it.Report.step;

import io.fragstate.generator.KafkaEventProducer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToLongFunction;

/**
 * The soak's phase of a {@link ScenarioRunner} run (in place of a single disruption): for the
 * plan's minutes, a {@link NodeSampler node} and {@link JobSampler job} sample every sample period
 * with a progress line, and every kill period a {@code kill -9} of a TaskManager that runs window
 * subtasks ({@link Disruptions#killAndRecover}: waits for the recovery and a checkpoint after it),
 * after which the killed TaskManager is started again, as a supervisor would. Fails at once when
 * the job leaves RUNNING for good.
 */
final class SoakLoop implements ScenarioRunner.Phase {
    private static final Set<String> TERMINAL_STATES = Set.of("FAILED", "CANCELED", "FINISHED");
    private static final Duration POLL = Duration.ofSeconds(5);

    private final SoakPlan plan;
    private final Scenario scenario;
    private final int fragmentsPerObject;
    final List<NodeSampler.NodeSample> nodeSamples = new ArrayList<>();
    final List<JobSampler.JobSample> jobSamples = new ArrayList<>();
    final List<RecoveryTimeline> recoveries = new ArrayList<>();
    /** When the sampling started (epoch ms). */
    long startedAtMs;
    /** Every checkpoint duration of the run (sorted), filled at the end. */
    List<Long> checkpointDurations = List.of();

    SoakLoop(SoakPlan plan, Scenario scenario) {
        this.plan = plan;
        this.scenario = scenario;
        this.fragmentsPerObject = ReadmeConfig.fragmentsPerObject(scenario.flinkConfig());
    }

    /** k + m: every object's manifest is on that many holders, each of which counts its delete. */
    int fragmentsPerObject() {
        return fragmentsPerObject;
    }

    @Override
    public String run(ServiceStack stack, String jobId, ScenarioRunner.Result result, AtomicInteger generatorSecond,
            CompletableFuture<KafkaEventProducer.Stats> generator) throws Exception {
        FlinkRest rest = stack.rest();
        NodeSampler nodes = new NodeSampler(stack);
        JobSampler job = new JobSampler(rest, jobId);
        Disruptions disruptions = new Disruptions(scenario, stack);
        long start = System.nanoTime();
        startedAtMs = System.currentTimeMillis();
        long end = start + Duration.ofMinutes(plan.minutes()).toNanos();
        long nextSample = start;
        long nextKill = start + plan.killEvery().toNanos();
        step("soak: " + plan.minutes() + " min, kill -9 every " + plan.killEvery().toSeconds() + " s, a sample every "
                + plan.sampleEvery().toSeconds() + " s; samples go to " + plan.out());
        while (true) {
            long now = System.nanoTime();
            if (now >= nextSample) {
                sample(nodes, job, (now - start) / 60e9);
                nextSample += plan.sampleEvery().toNanos();
            }
            if (now >= end) {
                break;
            }
            if (now >= nextKill) {
                RecoveryTimeline tl = new RecoveryTimeline();
                tl.kind = Scenario.Kind.KILL_TASKMANAGERS.name();
                disruptions.killAndRecover(jobId, tl, scenario.disruption(), generatorSecond);
                recoveries.add(tl);
                for (String tm : tl.killedTaskManagers) {
                    stack.startTaskManager(tm);
                    step("started " + tm + " again");
                }
                nextKill += plan.killEvery().toNanos();
                continue;
            }
            String state = rest.job(jobId).path("state").asText();
            if (TERMINAL_STATES.contains(state)) {
                throw new IllegalStateException("job " + jobId + " is " + state + " during the soak");
            }
            job.poll();
            long wait = Math.min(Math.min(nextSample, nextKill), end) - System.nanoTime();
            Thread.sleep(Math.max(1, Math.min(POLL.toMillis(), wait / 1_000_000)));
        }
        if (jobSamples.get(jobSamples.size() - 1).minute() < plan.minutes() - 0.05) {
            sample(nodes, job, plan.minutes());
        }
        checkpointDurations = job.allDurations();
        return jobId;
    }

    private void sample(NodeSampler nodes, JobSampler job, double minute) throws Exception {
        List<NodeSampler.NodeSample> rows = nodes.sample(minute);
        nodeSamples.addAll(rows);
        long objects = nodes.manifestsDeletedTotal() / fragmentsPerObject;
        JobSampler.JobSample j = job.sample(minute, objects);
        jobSamples.add(j);
        step(String.format(java.util.Locale.ROOT,
                "soak %.1f/%d min: %,d objects deleted (%,.0f/min) | rss max %s | fds max %s, fragment fds max %s"
                        + " | tombstones max %s, file max %s | store %,d MiB | checkpoints %d (p50 %d ms, p99 %d ms),"
                        + " failed %d | %.0f records/s",
                minute, plan.minutes(), objects, minute > 0 ? objects / minute : 0.0,
                max(rows, r -> r.rssBytes() >> 20, " MiB"), max(rows, NodeSampler.NodeSample::fds, ""),
                max(rows, NodeSampler.NodeSample::fragmentFds, ""), max(rows, NodeSampler.NodeSample::tombstones, ""),
                max(rows, r -> r.tombstoneFileBytes() >> 10, " KiB"),
                rows.stream().mapToLong(r -> Math.max(0, r.storeBytes())).sum() >> 20,
                j.checkpointsCompleted(), j.p50Ms(), j.p99Ms(), j.checkpointsFailedTotal(), j.recordsPerSecond()));
    }

    /** "value unit (node)" of the node with the largest figure. */
    private static String max(List<NodeSampler.NodeSample> rows, ToLongFunction<NodeSampler.NodeSample> f, String unit) {
        return rows.stream().max(Comparator.comparingLong(f))
                .map(r -> String.format(java.util.Locale.ROOT, "%,d%s (%s)", f.applyAsLong(r), unit, r.node())).orElse("-");
    }
}
