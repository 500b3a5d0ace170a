package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The soak's log scan: an allowed ERROR only near a kill, and only with its stated cause. */
class LogScanTest {
    private static final String TIME = "2026-12-01 10:41:23,795";
    private static final String ERROR = TIME + " ERROR org.apache.flink.runtime.rpc.pekko.FencedPekkoRpcActor"
            + "       [] - Caught exception while executing runnable in main thread.";

    private static long killAt() {
        return LocalDateTime.of(2026, 12, 1, 10, 41, 23, 500_000_000).atZone(ZoneId.systemDefault()).toInstant().toEpochMilli();
    }

    private static LogScan.Findings scan(Path run, String cause, long kill) throws Exception {
        Files.createDirectories(run.resolve("flink/log"));
        Files.writeString(run.resolve("flink/log/flink-jobmanager.log"), ERROR + "\n" + cause + "\n");
        return LogScan.scan(run, List.of(kill));
    }

    @Test
    void aKnownFlinkErrorRightAfterAKillWithItsCauseIsAllowed(@TempDir Path run) throws Exception {
        LogScan.Findings f = scan(run, "java.lang.IllegalStateException: Trying to open gateway for unseen checkpoint:"
                + " latest known checkpoint = 831, incoming checkpoint = 832", killAt());
        assertThat(f.clean()).as("%s", f.unexpected()).isTrue();
    }

    @Test
    void theSameLineWithAnotherCauseOrFarFromAKillFails(@TempDir Path run) throws Exception {
        assertThat(scan(run.resolve("other-cause"), "java.lang.NullPointerException", killAt()).clean()).isFalse();
        assertThat(scan(run.resolve("no-kill"), "java.lang.IllegalStateException: Trying to open gateway for unseen"
                + " checkpoint", killAt() - 3_600_000).clean()).isFalse();
    }
}
