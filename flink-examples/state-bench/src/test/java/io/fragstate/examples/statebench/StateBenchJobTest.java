package io.fragstate.examples.statebench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The whole job on a local MiniCluster, bounded, and the checker on what it committed. */
class StateBenchJobTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder()
                    .setNumberTaskManagers(1)
                    .setNumberSlotsPerTaskManager(2)
                    .build());

    @Test
    void boundedRunCommitsExactlyOnceAndVerifiedState(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("out");
        // 1 MiB in 512-byte values = 2,048 keys; 6,000 events = every key 2-3 times. The fill (2,048
        // events at 20,000/s) then 3,952 events at 10,000/s: at least ~0.4 s with the rate limiter on.
        BenchSettings s = BenchSettings.parse(new String[] {"--state-mb", "1", "--value-bytes", "512",
                "--fill-rate", "20000", "--rate", "10000", "--events", "6000", "--output", out.toUri().toString()});
        Configuration conf = new Configuration();
        conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(100));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        StateBenchJob.build(env, s);

        long t0 = System.nanoTime();
        env.execute("state-bench test");
        long millis = (System.nanoTime() - t0) / 1_000_000;

        OutputCheck.Result r = OutputCheck.check(out, 6000);
        assertThat(r.summary()).startsWith("OK: events 6000, keys 2048, max index 5999");
        assertThat(r.files()).isGreaterThan(1); // rolled on checkpoints
        assertThat(millis).as("run time in ms (paced source)").isGreaterThanOrEqualTo(400);
    }
}
