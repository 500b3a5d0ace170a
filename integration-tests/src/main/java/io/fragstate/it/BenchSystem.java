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
    /**
     * fragstate RS(4,2) with zstd (level 1) before the coding: what compression costs or gains on
     * RocksDB's files (their blocks are compressed by RocksDB already, the values are random).
     */
    FRAGSTATE_RS42_ZSTD("fragstate-rs42-zstd"),
    /**
     * fragstate RS(4,2) plus Flink's task-local recovery: the TaskManagers that survive restore
     * from their own disk, only the lost one's subtasks fetch fragments from their peers (what
     * HDFS gets from its first replica on the writer's host, without the network).
     */
    FRAGSTATE_RS42_LOCAL("fragstate-rs42-local"),
    /** HDFS with 3× replication (NameNode + DataNodes). */
    HDFS("hdfs"),
    /**
     * Reference, not a peer: HDFS 3× plus Flink's task-local recovery (a second copy of every
     * snapshot on the TaskManager's disk; a subtask restored on the TaskManager that ran it reads
     * that copy, one moved elsewhere downloads as without it).
     */
    HDFS_LOCAL("hdfs-local"),
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
        throw new IllegalArgumentException("unknown system '" + id + "': allowed are fragstate-rs42, fragstate-rs22, fragstate-rs42-zstd, fragstate-rs42-local, hdfs, hdfs-local, hdfs-ec, s3, file");
    }

    boolean fragstate() {
        return this == FRAGSTATE_RS42 || this == FRAGSTATE_RS22 || this == FRAGSTATE_RS42_ZSTD || this == FRAGSTATE_RS42_LOCAL;
    }

    /** Flink's task-local recovery on (a local copy of every snapshot, read when a subtask comes back to its TaskManager). */
    boolean taskLocalRecovery() {
        return this == HDFS_LOCAL || this == FRAGSTATE_RS42_LOCAL;
    }

    boolean hdfs() {
        return this == HDFS || this == HDFS_LOCAL || this == HDFS_EC;
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
            c.put("fragstate.data-fragments", this == FRAGSTATE_RS22 ? "2" : "4");
            c.put("fragstate.parity-fragments", "2");
            // on disk, as in production: 3 GB of state held in memory by 7 JVMs does not fit this
            // machine; every TaskManager takes its own node-N below the one folder
            c.put("fragstate.store.dir", storage.fragmentDir().toString());
            if (this == FRAGSTATE_RS42_ZSTD) {
                c.put("fragstate.compression", "zstd:1");
            }
        } else {
            c.put("state.backend.type", "rocksdb");
            c.put("execution.checkpointing.dir", storage.checkpointUri(this));
        }
        if (taskLocalRecovery()) {
            c.put("execution.checkpointing.local-backup.enabled", "true");
            c.put("execution.state-recovery.from-local", "true");
        }
        c.putAll(storage.extraFlinkConfig(this));
        return c;
    }
}
