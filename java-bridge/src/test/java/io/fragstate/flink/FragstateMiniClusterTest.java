/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import io.fragstate.flink.node.FragstateMetrics;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.client.program.ClusterClient;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.test.junit5.InjectClusterClient;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Unmodified Flink jobs on a MiniCluster with the one-line setup ({@code state.backend.type:
 * FragstateStateBackendFactory}) on the embedded mesh: a task failure and its exact restore,
 * rescaling 2 → 3 from a retained checkpoint, and a savepoint round trip.
 */
class FragstateMiniClusterTest {

    @RegisterExtension
    static final MiniClusterExtension CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(3)
                            .setConfiguration(clusterConfig())
                            .build());

    private static Configuration clusterConfig() {
        Configuration c = new Configuration();
        c.set(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL, Duration.ofMillis(200));
        return c;
    }

    private static final int KEYS = 300;

    private static Configuration jobConfig(String authority, String localBackend) {
        Configuration c = new Configuration();
        c.set(StateBackendOptions.STATE_BACKEND, FragstateStateBackendFactory.class.getName());
        c.setString(FragstateOptions.LOCAL_BACKEND.key(), localBackend);
        c.set(FragstateOptions.CHECKPOINT_DIR, "fragstate://" + authority + "/checkpoints");
        c.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
        c.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(200));
        c.set(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD, MemorySize.ZERO);
        c.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        c.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3);
        c.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
        return c;
    }

    private static void assertExact(String run, long total) {
        Map<Long, long[]> results = CountingJob.RESULTS.get(run);
        assertThat(results).hasSize(KEYS);
        for (long k = 0; k < KEYS; k++) {
            long[] got = results.get(k);
            assertThat(got[0]).as("count of key %d", k).isEqualTo(CountingJob.expectedCount(total, KEYS, k));
            assertThat(got[1]).as("sum of key %d", k).isEqualTo(CountingJob.expectedSum(total, KEYS, k));
        }
    }

    private static void waitUntil(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    private static long opened() throws IOException {
        return FragstateMetrics.freshStats().at("/client/objectsOpened").asLong();
    }

    /**
     * {@code hashmap} and {@code rocksdb}: FragstateStateBackend with that local backend. {@code
     * storage-only}: Flink's own HashMap backend with {@code execution.checkpointing.storage:
     * FragstateCheckpointStorageFactory}.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"hashmap", "rocksdb", "storage-only"})
    void taskFailureRestoresExactState(String mode) throws Exception {
        String run = "failure-" + mode;
        String localBackend = mode.equals("rocksdb") ? "rocksdb" : "hashmap";
        CountingJob.reset(run);
        long total = 24_000;
        Configuration c = jobConfig("mc-" + run, localBackend);
        if (mode.equals("storage-only")) {
            c.set(StateBackendOptions.STATE_BACKEND, "hashmap");
            c.set(CheckpointingOptions.CHECKPOINT_STORAGE, FragstateCheckpointStorageFactory.class.getName());
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(c);
        env.setParallelism(2);
        CountingJob.build(env, run, total, KEYS, 6_000, 3);
        long openedBefore = opened();

        JobClient job = env.executeAsync(run);
        waitUntil("two checkpoints", Duration.ofSeconds(60), () -> CountingJob.CHECKPOINTS.get(run).get() >= 2);
        // RocksDB (incremental) uploads its SST files to the shared directory; HashMap has none
        Path shared = new Path("fragstate://mc-" + run + "/checkpoints/" + job.getJobID() + "/shared");
        assertThat(shared.getFileSystem().exists(shared.getParent())).as("checkpoints in fragstate://").isTrue();
        if (localBackend.equals("rocksdb")) {
            assertThat(shared.getFileSystem().listStatus(shared)).as("RocksDB's shared SST files").isNotEmpty();
        } else {
            assertThat(shared.getFileSystem().exists(shared)).as("no shared files with HashMap").isFalse();
        }
        job.getJobExecutionResult().get(120, TimeUnit.SECONDS);

        assertThat(CountingJob.FAILED.get(run)).as("the failure was injected").isTrue();
        assertThat(CountingJob.FIRST_AFTER_RESTART.get(run).get())
                .as("the restarted source resumed from a checkpoint, not from 0")
                .isPositive();
        assertThat(opened() - openedBefore).as("state files were read back from fragstate://").isPositive();
        assertExact(run, total);
    }

    @Test
    void rescaleTwoToThreeFromARetainedCheckpoint() throws Exception {
        String run = "rescale";
        long total = 30_000;
        Configuration c = jobConfig("mc-rescale", "hashmap");
        c.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION, ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);

        CountingJob.reset(run);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(c);
        env.setParallelism(2);
        CountingJob.build(env, run, total, KEYS, 5_000, 0);
        JobClient first = env.executeAsync(run + "-p2");
        waitUntil("three checkpoints", Duration.ofSeconds(60), () -> CountingJob.CHECKPOINTS.get(run).get() >= 3);
        first.cancel().get(60, TimeUnit.SECONDS);
        waitUntil("cancellation", Duration.ofSeconds(60), () -> status(first) == JobStatus.CANCELED);
        assertThat(CountingJob.PROCESSED.get(run).get()).as("phase 1 stopped midway").isLessThan(total);

        String checkpoint = latestCheckpoint("fragstate://mc-rescale/checkpoints/" + first.getJobID());

        CountingJob.reset(run);
        Configuration restore = new Configuration(c);
        restore.set(StateRecoveryOptions.SAVEPOINT_PATH, checkpoint);
        StreamExecutionEnvironment env3 = StreamExecutionEnvironment.getExecutionEnvironment(restore);
        env3.setParallelism(3);
        CountingJob.build(env3, run, total, KEYS, 20_000, 0);
        env3.executeAsync(run + "-p3").getJobExecutionResult().get(120, TimeUnit.SECONDS);

        assertThat(CountingJob.SUBTASKS.get(run)).containsExactlyInAnyOrder(0, 1, 2);
        assertThat(CountingJob.PROCESSED.get(run).get()).as("phase 2 did not start from 0").isLessThan(total);
        assertExact(run, total);
    }

    @Test
    void savepointRoundTrip() throws Exception {
        String run = "savepoint";
        long total = 20_000;
        Configuration c = jobConfig("mc-savepoint", "rocksdb");

        CountingJob.reset(run);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(c);
        env.setParallelism(2);
        CountingJob.build(env, run, total, KEYS, 5_000, 0);
        JobClient first = env.executeAsync(run + "-1");
        waitUntil("progress", Duration.ofSeconds(60), () -> CountingJob.PROCESSED.get(run).get() > 2_000);
        String savepoint = first.stopWithSavepoint(false, null, SavepointFormatType.CANONICAL).get(60, TimeUnit.SECONDS);
        assertThat(savepoint).startsWith("fragstate://mc-savepoint/savepoints/");
        assertThat(FileSystem.get(new Path(savepoint).toUri()).exists(new Path(savepoint, "_metadata"))).isTrue();
        long before = CountingJob.PROCESSED.get(run).get();
        assertThat(before).isLessThan(total);

        CountingJob.reset(run);
        Configuration restore = new Configuration(c);
        restore.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        StreamExecutionEnvironment env2 = StreamExecutionEnvironment.getExecutionEnvironment(restore);
        env2.setParallelism(2);
        CountingJob.build(env2, run, total, KEYS, 20_000, 0);
        env2.executeAsync(run + "-2").getJobExecutionResult().get(120, TimeUnit.SECONDS);

        assertThat(CountingJob.PROCESSED.get(run).get()).isEqualTo(total - before);
        assertExact(run, total);
    }

    /** The node's gauges are in the TaskManager's metric group, served by the REST API. */
    @Test
    void nodeMetricsInTheRestApi(@InjectClusterClient ClusterClient<?> client) throws Exception {
        String run = "metrics";
        CountingJob.reset(run);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(jobConfig("mc-metrics", "hashmap"));
        env.setParallelism(1);
        CountingJob.build(env, run, 10_000_000, KEYS, 5_000, 0);
        JobClient job = env.executeAsync(run);
        waitUntil("two checkpoints", Duration.ofSeconds(60), () -> CountingJob.CHECKPOINTS.get(run).get() >= 2);

        HttpClient http = HttpClient.newHttpClient();
        String base = client.getWebInterfaceURL();
        ObjectMapper json = new ObjectMapper();
        JsonNode tms = json.readTree(get(http, base + "/taskmanagers")).get("taskmanagers");
        assertThat(tms).isNotEmpty();
        String url = base + "/taskmanagers/" + tms.get(0).get("id").asText()
                + "/metrics?get=fragstate.bytesHeld,fragstate.liveNodes,fragstate.bytesWritten";
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        Map<String, Long> values = new java.util.HashMap<>();
        while (!(values.getOrDefault("fragstate.bytesWritten", 0L) > 0
                        && values.getOrDefault("fragstate.bytesHeld", 0L) > 0
                        && values.getOrDefault("fragstate.liveNodes", 0L) == 6)
                && System.nanoTime() < deadline) {
            for (JsonNode m : json.readTree(get(http, url))) {
                values.put(m.get("id").asText(), Long.parseLong(m.get("value").asText()));
            }
            Thread.sleep(200);
        }
        assertThat(values).containsEntry("fragstate.liveNodes", 6L);
        assertThat(values.get("fragstate.bytesWritten")).isPositive();
        assertThat(values.get("fragstate.bytesHeld")).isPositive();
        job.cancel().get(60, TimeUnit.SECONDS);
    }

    private static String get(HttpClient http, String url) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as("GET %s: %s", url, r.body()).isEqualTo(200);
        return r.body();
    }

    private static JobStatus status(JobClient job) {
        try {
            return job.getJobStatus().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            return null;
        }
    }

    /** The newest {@code chk-N} below the job's checkpoint directory that has its metadata. */
    private static String latestCheckpoint(String jobDir) throws IOException {
        Path dir = new Path(jobDir);
        FileSystem fs = dir.getFileSystem();
        long best = -1;
        for (FileStatus s : fs.listStatus(dir)) {
            String name = s.getPath().getName();
            if (s.isDir() && name.startsWith("chk-") && fs.exists(new Path(s.getPath(), "_metadata"))) {
                best = Math.max(best, Long.parseLong(name.substring(4)));
            }
        }
        assertThat(best).as("a retained checkpoint under %s", jobDir).isPositive();
        return jobDir + "/chk-" + best;
    }
}
