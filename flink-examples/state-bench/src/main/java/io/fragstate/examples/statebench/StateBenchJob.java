package io.fragstate.examples.statebench;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;

/**
 * A keyed job with a chosen amount of state, for recovery benchmarks: event indices 0, 1, 2, …
 * from Flink's checkpointed {@link DataGeneratorSource} (parallelism 1, so the indices are one
 * dense sequence; paced by {@link FillThenSteadyRate}), keyed by {@code index mod keys}, counted
 * and verified per key by {@link CountAndVerify} (keys × value-bytes of state), and written as
 * {@code index,key,count,ok|BAD} lines by an exactly-once {@link FileSink} that commits on every
 * checkpoint. {@link StateBenchCheck} verifies the committed output.
 *
 * <p>State backend, checkpoint storage and checkpoint interval come from the cluster's
 * configuration ({@code execution.checkpointing.interval} must be set: the sink commits only on
 * checkpoints).
 *
 * <pre>
 * flink run -p 3 state-bench.jar --output file:///data/out [--state-mb 300] [--value-bytes 4096]
 *     [--fill-rate 50000] [--rate 2000] [--events N] [--job-name "State Bench"]
 * </pre>
 */
public final class StateBenchJob {
    private StateBenchJob() {}

    public static void main(String[] args) throws Exception {
        BenchSettings settings = BenchSettings.parse(args);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        if (!env.getCheckpointConfig().isCheckpointingEnabled()) {
            throw new IllegalStateException("checkpointing is off: set execution.checkpointing.interval in the cluster's "
                    + "config.yaml or with -Dexecution.checkpointing.interval=... (the FileSink commits only on checkpoints)");
        }
        build(env, settings);
        env.execute(settings.jobName());
    }

    /** Adds source → keyed count-and-verify → FileSink to {@code env} (also used by the tests). */
    static void build(StreamExecutionEnvironment env, BenchSettings s) {
        env.setRuntimeMode(RuntimeExecutionMode.STREAMING); // the generator source is bounded; never run it as a batch job
        SourcePosition position = new SourcePosition();
        DataGeneratorSource<Long> source = new DataGeneratorSource<>(
                new EventIndexGenerator(position, s.keys()),
                s.events(),
                new FillThenSteadyRate(position, s.keys(), s.fillPerSecond(), s.steadyPerSecond()),
                Types.LONG);
        FileSink<String> sink = FileSink.forRowFormat(new Path(s.output()), new SimpleStringEncoder<String>("UTF-8"))
                .withBucketAssigner(new BasePathBucketAssigner<>())
                .withRollingPolicy(OnCheckpointRollingPolicy.build())
                .build();
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "event-index")
                .setParallelism(1)
                .uid("event-index")
                .keyBy(new KeyOfIndex(s.keys()))
                .process(new CountAndVerify(s.valueBytes())).name("count-and-verify").uid("count-and-verify")
                .sinkTo(sink).name("committed-output").uid("committed-output");
    }

    /** Event {@code i} belongs to key {@code i mod keys}. */
    static final class KeyOfIndex implements KeySelector<Long, Long> {
        private static final long serialVersionUID = 1L;

        private final long keys;

        KeyOfIndex(long keys) {
            this.keys = keys;
        }

        @Override
        public Long getKey(Long index) {
            return index % keys;
        }
    }
}
