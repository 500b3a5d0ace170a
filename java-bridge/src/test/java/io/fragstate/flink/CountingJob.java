/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A deterministic stateful job for the MiniCluster tests: numbers {@code 0 … total-1} from a
 * checkpointed, rate-limited source, keyed by {@code i % keys}; per key a count, a sum and a
 * padding blob (so that snapshots are files, not inline bytes). Every update is published to
 * {@link #RESULTS}, so a test can compare the final per-key state with the exact expectation:
 * lost state undercounts, replayed-but-not-restored state overcounts.
 *
 * <p>Static maps are keyed by a run name, because the MiniCluster runs in the test's JVM; they
 * fill lazily, so the job also runs in a separate TaskManager JVM.
 */
final class CountingJob {

    static final Map<String, Map<Long, long[]>> RESULTS = new ConcurrentHashMap<>();
    static final Map<String, AtomicInteger> CHECKPOINTS = new ConcurrentHashMap<>();
    static final Map<String, AtomicBoolean> FAILED = new ConcurrentHashMap<>();
    /** First number seen by a failed-over map task: > 0 proves the source resumed from a checkpoint. */
    static final Map<String, AtomicLong> FIRST_AFTER_RESTART = new ConcurrentHashMap<>();
    static final Map<String, Set<Integer>> SUBTASKS = new ConcurrentHashMap<>();
    static final Map<String, AtomicLong> PROCESSED = new ConcurrentHashMap<>();

    private CountingJob() {}

    static void reset(String run) {
        RESULTS.put(run, new ConcurrentHashMap<>());
        CHECKPOINTS.put(run, new AtomicInteger());
        FAILED.put(run, new AtomicBoolean());
        FIRST_AFTER_RESTART.put(run, new AtomicLong(-1));
        SUBTASKS.put(run, ConcurrentHashMap.newKeySet());
        PROCESSED.put(run, new AtomicLong());
    }

    /**
     * Builds the job. {@code failAfterCheckpoints > 0} makes one attempt-0 map subtask throw once
     * that many checkpoints have completed.
     */
    static void build(
            StreamExecutionEnvironment env, String run, long total, int keys, double perSecond, int failAfterCheckpoints) {
        env.fromSource(
                        new DataGeneratorSource<>(i -> i, total, RateLimiterStrategy.perSecond(perSecond), Types.LONG),
                        WatermarkStrategy.noWatermarks(),
                        "numbers")
                .uid("numbers")
                .map(new FailOnce(run, failAfterCheckpoints))
                .uid("fail-once")
                .keyBy(i -> i % keys)
                .process(new Accumulate(run))
                .uid("accumulate")
                .sinkTo(new DiscardingSink<>())
                .uid("discard");
    }

    static long expectedCount(long total, int keys, long key) {
        return total / keys + (key < total % keys ? 1 : 0);
    }

    static long expectedSum(long total, int keys, long key) {
        long n = expectedCount(total, keys, key);
        // key + (key + keys) + … , n terms
        return n * key + keys * (n * (n - 1) / 2);
    }

    /** Passes numbers through; throws once (attempt 0 only) after enough checkpoints. */
    static final class FailOnce extends RichMapFunction<Long, Long> implements CheckpointListener {
        private final String run;
        private final int failAfter;
        private transient boolean first;

        FailOnce(String run, int failAfter) {
            this.run = run;
            this.failAfter = failAfter;
        }

        @Override
        public void open(OpenContext ctx) {
            first = true;
        }

        @Override
        public Long map(Long value) {
            int attempt = getRuntimeContext().getTaskInfo().getAttemptNumber();
            if (attempt > 0 && first) {
                FIRST_AFTER_RESTART.computeIfAbsent(run, r -> new AtomicLong(-1)).compareAndSet(-1, value);
            }
            first = false;
            if (failAfter > 0
                    && attempt == 0
                    && CHECKPOINTS.computeIfAbsent(run, r -> new AtomicInteger()).get() >= failAfter
                    && FAILED.computeIfAbsent(run, r -> new AtomicBoolean()).compareAndSet(false, true)) {
                throw new RuntimeException("injected failure (CountingJob " + run + ")");
            }
            return value;
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            if (getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0) {
                CHECKPOINTS.computeIfAbsent(run, r -> new AtomicInteger()).incrementAndGet();
            }
        }
    }

    /** Count, sum and a padding blob per key. */
    static final class Accumulate extends KeyedProcessFunction<Long, Long, Long> {
        private final String run;
        private transient ValueState<long[]> acc;
        private transient ValueState<byte[]> padding;

        Accumulate(String run) {
            this.run = run;
        }

        @Override
        public void open(OpenContext ctx) {
            acc = getRuntimeContext().getState(new ValueStateDescriptor<>("acc", long[].class));
            padding = getRuntimeContext().getState(new ValueStateDescriptor<>("padding", byte[].class));
            SUBTASKS.computeIfAbsent(run, r -> ConcurrentHashMap.newKeySet()).add(getRuntimeContext().getTaskInfo().getIndexOfThisSubtask());
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) throws Exception {
            long[] a = acc.value();
            if (a == null) {
                a = new long[2];
                byte[] pad = new byte[512];
                java.util.Arrays.fill(pad, (byte) (value & 0x7f));
                padding.update(pad);
            }
            a[0]++;
            a[1] += value;
            acc.update(a);
            long key = ctx.getCurrentKey();
            long[] snapshot = {a[0], a[1]};
            RESULTS.computeIfAbsent(run, r -> new ConcurrentHashMap<>()).merge(key, snapshot, (old, neu) -> neu[0] >= old[0] ? neu : old);
            PROCESSED.computeIfAbsent(run, r -> new AtomicLong()).incrementAndGet();
            out.collect(value);
        }
    }
}
