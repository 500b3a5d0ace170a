package io.fragstate.it;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A checkpoint storage the recovery benchmark compares, and the Flink settings that select it.
 * Every system runs the same job on RocksDB with incremental checkpoints; only where the
 * checkpoint files go differs. The services behind HDFS and S3 are started by {@link BenchStorage}.
 */
enum BenchSystem {
    /** fragstate, RS(4,2): 6 fragments per object on 6 other nodes, any 4 rebuild it. */
    FRAGSTATE_RS42("fragstate-rs42"),
    /** fragstate, RS(2,2): 4 fragments, any 2 rebuild it (more redundancy, fewer peers per read). */
    FRAGSTATE_RS22("fragstate-rs22"),
    /** HDFS with 3× replication (NameNode + DataNodes). */
    HDFS("hdfs"),
    /** HDFS with the erasure-coding policy RS-3-2-1024k on the checkpoint directory. */
    HDFS_EC("hdfs-ec"),
    /** An S3 server (versitygw) through Hadoop's s3a file system. */
    S3("s3"),
    /** Reference, not a peer: local {@code file://} (here a folder every emulated host shares, no network). */
    FILE("file");

    /** DataNodes of the HDFS systems (RS-3-2 needs 5). */
    static final int DATANODES = 5;

    final String id;

    BenchSystem(String id) {
        this.id = id;
    }

    static BenchSystem named(String id) {
        for (BenchSystem s : values()) {
            if (s.id.equals(id)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown system '" + id + "': allowed are fragstate-rs42, fragstate-rs22, hdfs, hdfs-ec, s3, file");
    }

    boolean fragstate() {
        return this == FRAGSTATE_RS42 || this == FRAGSTATE_RS22;
    }

    boolean hdfs() {
        return this == HDFS || this == HDFS_EC;
    }

    /**
     * The settings that pick this system's checkpoint storage, on top of the benchmark's common
     * ones ({@link BenchRun}); {@code storage} knows the service addresses.
     */
    Map<String, String> flinkConfig(BenchStorage storage) {
        Map<String, String> c = new LinkedHashMap<>();
        if (fragstate()) {
            c.put("state.backend.type", "io.fragstate.flink.FragstateStateBackendFactory");
            c.put("fragstate.mode", "cluster");
            c.put("fragstate.local-backend", "rocksdb");
            c.put("fragstate.cluster-key-file", storage.clusterKey().toString());
            c.put("fragstate.data-fragments", this == FRAGSTATE_RS42 ? "4" : "2");
            c.put("fragstate.parity-fragments", "2");
        } else {
            c.put("state.backend.type", "rocksdb");
            c.put("execution.checkpointing.dir", storage.checkpointUri(this));
        }
        c.putAll(storage.extraFlinkConfig(this));
        return c;
    }
}
