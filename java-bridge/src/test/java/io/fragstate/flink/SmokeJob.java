/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * {@link CountingJob} as a job jar's main class, for a manual check of the plugin jar in a real
 * Flink distribution (see README.md, "Standalone smoke check"). Arguments: record count and the
 * number of completed checkpoints after which one task fails once (0: never).
 */
public final class SmokeJob {

    private SmokeJob() {}

    public static void main(String[] args) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.enableCheckpointing(500);
        CountingJob.build(env, "smoke", Long.parseLong(args[0]), 300, 8000, Integer.parseInt(args[1]));
        env.execute("fragstate-smoke");
    }
}
