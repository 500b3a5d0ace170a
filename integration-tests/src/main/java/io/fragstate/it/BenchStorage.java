package io.fragstate.it;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The storage services of one benchmark run, each a real process on its emulated host, started
 * and stopped through its {@code ci/lib} script: HDFS (NameNode on {@code nn}, DataNodes on
 * {@link BenchPlan#dataNodeHosts()}) and the S3 server (on {@code s3}); for fragstate the cluster
 * key (its storage nodes are the Flink processes themselves). Also what each run's Flink
 * processes need to reach them (settings, {@code HADOOP_CLASSPATH}) and the bytes each source
 * served.
 */
final class BenchStorage implements AutoCloseable {
    private final Path repo;
    private final Path runDir;
    private final Path netnsRun;
    private final BenchPlan plan;
    private final BenchSystem system;
    private String hdfsUri;
    /** True once the HDFS or S3 service was (being) started: close() stops it. */
    private boolean started;

    BenchStorage(Path repo, Path runDir, Path netnsRun, BenchPlan plan, BenchSystem system) {
        this.repo = repo;
        this.runDir = runDir;
        this.netnsRun = netnsRun;
        this.plan = plan;
        this.system = system;
    }

    /** Starts what {@code system} needs; waits until it serves. */
    void start() throws Exception {
        Files.createDirectories(runDir);
        if (system.fragstate()) {
            Shell.bash(repo, Duration.ofSeconds(30), "ci/lib/fragstate-nodes.sh", "keygen",
                    Artifacts.fragstateBinary(repo).toString(), clusterKey().toString());
        } else if (system.hdfs()) {
            started = true;
            hdfsUri = run(Duration.ofMinutes(3), "nn", "ci/lib/hdfs.sh", "namenode", runDir.toString(), addr("nn")).strip();
            List<String> dataNodes = plan.dataNodeHosts();
            for (String dn : dataNodes) {
                run(Duration.ofMinutes(2), dn, "ci/lib/hdfs.sh", "datanode", runDir.toString(), dn, addr(dn));
            }
            run(Duration.ofMinutes(3), null, "ci/lib/hdfs.sh", "wait-datanodes", runDir.toString(),
                    Integer.toString(dataNodes.size()));
            if (system == BenchSystem.HDFS_EC) {
                run(Duration.ofMinutes(2), null, "ci/lib/hdfs.sh", "ec", runDir.toString(), "/flink", "RS-3-2-1024k");
            }
        } else if (system == BenchSystem.S3) {
            started = true;
            run(Duration.ofMinutes(5), "s3", "ci/lib/s3.sh", "start", runDir.toString(), addr("s3"));
            run(Duration.ofMinutes(2), null, "ci/lib/s3.sh", "bucket", runDir.toString(), "flink");
        }
    }

    Path clusterKey() {
        return runDir.resolve("cluster.key");
    }

    /** fragstate's {@code fragstate.store.dir}: the fragments every node holds, one node-N each. */
    Path fragmentDir() {
        return runDir.resolve("fragments");
    }

    /** The stored data of this run (fragments, HDFS blocks and names, S3 objects and buffers); logs stay. */
    private void deleteData() {
        List<String> cmd = new ArrayList<>(List.of("rm", "-rf"));
        // hdfs.sh keeps the NameNode's name dir in hdfs/nn and each DataNode's blocks in hdfs/dn/NAME
        for (String d : List.of("fragments", "hdfs/nn", "hdfs/dn", "data", "s3a-buffer")) {
            cmd.add(runDir.resolve(d).toString());
        }
        Shell.run(repo, Map.of(), Duration.ofMinutes(5), cmd);
    }

    /** Where plain Flink puts checkpoints for {@code s}. */
    String checkpointUri(BenchSystem s) {
        switch (s) {
            case HDFS:
            case HDFS_LOCAL:
            case HDFS_EC:
                return hdfsUri + "/flink/checkpoints";
            case S3:
                return "s3a://flink/checkpoints"; // s3.sh flink-config says the same
            case FILE:
                return runDir.resolve("checkpoints").toUri().toString();
            default:
                throw new IllegalStateException(s + " has no checkpoint URI of plain Flink");
        }
    }

    /** Settings besides the checkpoint directory (S3: the fallback file system and its endpoint). */
    Map<String, String> extraFlinkConfig(BenchSystem s) {
        Map<String, String> c = new LinkedHashMap<>();
        if (s == BenchSystem.S3) {
            for (String line : run(Duration.ofSeconds(30), null, "ci/lib/s3.sh", "flink-config", runDir.toString(), "flink").split("\\R")) {
                int colon = line.indexOf(':');
                if (colon > 0 && !line.startsWith("#")) {
                    c.put(line.substring(0, colon).strip(), line.substring(colon + 1).strip());
                }
            }
        }
        return c;
    }

    /** Environment of the Flink processes: {@code HADOOP_CLASSPATH} / {@code HADOOP_CONF_DIR} for HDFS and S3. */
    Map<String, String> flinkEnv() {
        Map<String, String> env = new LinkedHashMap<>();
        String script = serviceScript();
        if (script != null) {
            for (String line : run(Duration.ofSeconds(30), null, script, "flink-env", runDir.toString()).split("\\R")) {
                String l = line.strip().replaceFirst("^export\\s+", "");
                int eq = l.indexOf('=');
                if (eq > 0) {
                    env.put(l.substring(0, eq), l.substring(eq + 1).replaceAll("^[\"']|[\"']$", ""));
                }
            }
        }
        return env;
    }

    /** Bytes each storage source has served so far (HDFS: per DataNode; S3: the server), if known. */
    Map<String, Long> bytesServed() {
        Map<String, Long> out = new LinkedHashMap<>();
        String script = serviceScript();
        if (script == null) {
            return out;
        }
        try {
            for (String line : run(Duration.ofSeconds(30), null, script, "bytes", runDir.toString()).split("\\R")) {
                // hdfs.sh: "NAME READ WRITTEN" per DataNode; s3.sh: one number, the bytes the server sent
                String[] f = line.strip().split("\\s+");
                if (f.length >= 2 && f[1].matches("\\d+")) {
                    out.put(f[0], Long.parseLong(f[1]));
                } else if (f.length == 1 && f[0].matches("\\d+")) {
                    out.put(system.id, Long.parseLong(f[0]));
                }
            }
        } catch (IllegalStateException e) {
            Report.step("bytes served by " + system.id + " not available: " + e.getMessage());
        }
        return out;
    }

    /** The {@code ci/lib} script of the system's storage service, or null (fragstate, file). */
    private String serviceScript() {
        return system.hdfs() ? "ci/lib/hdfs.sh" : system == BenchSystem.S3 ? "ci/lib/s3.sh" : null;
    }

    private String addr(String host) {
        return Shell.bash(repo, Duration.ofSeconds(10), "ci/lib/netns.sh", "addr", netnsRun.toString(), host).strip();
    }

    /** A {@code ci/lib} script, its daemon started on {@code host} (null: run here). */
    private String run(Duration timeout, String host, String script, String... args) {
        Map<String, String> env = new LinkedHashMap<>();
        if (host != null) {
            env.put("LAUNCH", repo.resolve("ci/lib/netns.sh") + " exec " + netnsRun + " " + host);
        }
        List<String> cmd = new ArrayList<>(List.of("bash", repo.resolve(script).toString()));
        cmd.addAll(List.of(args));
        return Shell.run(repo, env, timeout, cmd);
    }

    /** Stops the service, then deletes what it stored (a 3 GB run leaves up to 15 GB). */
    @Override
    public void close() {
        try {
            if (started) {
                run(Duration.ofMinutes(1), null, serviceScript(), "stop", runDir.toString());
            }
            deleteData();
        } catch (RuntimeException e) {
            Report.step("stopping " + system.id + "'s storage or deleting its data failed: " + e.getMessage());
        }
    }
}
