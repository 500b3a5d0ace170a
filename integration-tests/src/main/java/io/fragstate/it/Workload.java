package io.fragstate.it;

import io.fragstate.generator.EventSource;
import java.nio.file.Path;
import java.util.List;

/**
 * The plain Flink job a scenario runs and everything that is particular to it: its jar, its
 * topics and arguments, the reference data it needs before it starts, its input and the exact
 * output the reference computation expects. Everything else in a run (services, disruption,
 * exactly-once comparison) is the workload's business no more.
 */
interface Workload {
    /** The Daedalus Traffic Monitoring job (the default). */
    Workload TRAFFIC = new TrafficWorkload();
    /** The Yahoo Streaming Benchmark job. */
    Workload YSB = new YsbWorkload();

    /** Short name: run directories and scenario ids of other workloads than the default start with it. */
    String name();

    Path jobJar(Path repo);

    String inputTopic();

    String outputTopic();

    /** The output JSON field whose value must be the Kafka record key ({@code lp}, {@code campaign_id}). */
    String keyField();

    /** The input of the scenarios that run this job (seed, rate scale, duration, speedup). */
    Scenario.Simulation defaultSimulation();

    /** The exact output lines for {@code sim}, computed without Flink. */
    List<String> expected(Scenario.Simulation sim);

    /** The input for {@code sim}, as the generator sends it. */
    EventSource events(Scenario.Simulation sim);

    /**
     * What the job reads besides its input, made before it is submitted (a registry file in
     * {@code runDir}, a campaigns topic on {@code brokers}).
     */
    void prepare(Scenario.Simulation sim, Path runDir, String brokers) throws Exception;

    /** The job's arguments beyond brokers, topics, parallelism, checkpoint interval and transactions. */
    List<String> jobArguments(Path runDir);

    /** {@code traffic} or {@code ysb}. */
    static Workload named(String name) {
        switch (name) {
            case "traffic":
                return TRAFFIC;
            case "ysb":
                return YSB;
            default:
                throw new IllegalArgumentException("unknown job '" + name + "': use traffic or ysb");
        }
    }
}
