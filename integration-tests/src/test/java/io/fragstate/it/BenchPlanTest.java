package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The recovery benchmark's command line and the settings each system gets. */
class BenchPlanTest {
    private static final Path REPO = Path.of("/repo");

    private static BenchPlan parse(String... args) {
        return BenchPlan.parse(args, REPO);
    }

    @Test
    void theWholeJobRestartIsAFailureThatKillsNothing() {
        BenchPlan p = parse("--failures", "one,job", "--systems", "fragstate-rs42-zstd,hdfs-local");
        assertThat(p.failures()).containsExactly(BenchPlan.Failure.ONE, BenchPlan.Failure.JOB);
        assertThat(BenchPlan.Failure.JOB.kills).isZero();
        assertThat(p.systems()).containsExactly(BenchSystem.FRAGSTATE_RS42_ZSTD, BenchSystem.HDFS_LOCAL);
    }

    @Test
    void badValuesNameWhatIsAllowed() {
        assertThatThrownBy(() -> parse("--failures", "three"))
                .hasMessageContaining("'three'").hasMessageContaining("one, two, job");
        assertThatThrownBy(() -> parse("--systems", "minio"))
                .hasMessageContaining("'minio'").hasMessageContaining("hdfs-local");
        assertThatThrownBy(() -> parse("--state-mb", "0")).hasMessageContaining("1 … 16384");
    }

    @Test
    void fragstateSystemsKeepFragmentsOnDiskAndOnlyTheZstdOneCompresses() {
        BenchStorage storage = new BenchStorage(REPO, Path.of("/run/storage"), null, parse(), BenchSystem.FRAGSTATE_RS42_ZSTD);
        Map<String, String> zstd = BenchSystem.FRAGSTATE_RS42_ZSTD.flinkConfig(storage);
        assertThat(zstd).containsEntry("fragstate.compression", "zstd:1")
                .containsEntry("fragstate.data-fragments", "4")
                .containsEntry("fragstate.store.dir", "/run/storage/fragments");
        Map<String, String> rs22 = BenchSystem.FRAGSTATE_RS22.flinkConfig(storage);
        assertThat(rs22).containsEntry("fragstate.data-fragments", "2").doesNotContainKey("fragstate.compression");
    }

    @Test
    void onlyTheLocalSystemsTurnOnTaskLocalRecovery() {
        BenchStorage storage = new BenchStorage(REPO, Path.of("/run/storage"), null, parse(), BenchSystem.HDFS_LOCAL);
        assertThat(BenchSystem.HDFS_LOCAL.flinkConfig(storage))
                .containsEntry("execution.checkpointing.local-backup.enabled", "true")
                .containsEntry("execution.state-recovery.from-local", "true")
                .containsEntry("state.backend.type", "rocksdb");
        assertThat(BenchSystem.FRAGSTATE_RS42_LOCAL.flinkConfig(storage))
                .containsEntry("execution.state-recovery.from-local", "true")
                .containsEntry("fragstate.data-fragments", "4");
        for (BenchSystem s : new BenchSystem[] {BenchSystem.HDFS, BenchSystem.FILE, BenchSystem.FRAGSTATE_RS42}) {
            assertThat(s.flinkConfig(storage)).as(s.id).doesNotContainKey("execution.state-recovery.from-local");
        }
    }
}
