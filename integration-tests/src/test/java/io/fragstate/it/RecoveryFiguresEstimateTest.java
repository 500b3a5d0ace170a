package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RecoveryFiguresEstimateTest {
    private static Map<String, Object> experiment(double throughput, double killAt, double checkpointBefore, double detection,
            double running, double restore, double stateBytes, double recovery, boolean recovered) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("throughput", throughput);
        e.put("kill_at_s", killAt);
        e.put("checkpoint_before_kill_s", checkpointBefore);
        e.put("detection_s", detection);
        e.put("kill_to_running_s", running);
        e.put("window_restore_s", restore);
        e.put("state_bytes_per_subtask", stateBytes);
        e.put("recovery_s", recovery);
        e.put("recovered", recovered);
        return e;
    }

    @Test
    void mediansOfTheTimelinesAndTheHighestCatchUpRateOfTheBacklog() {
        var f = RecoveryFiguresEstimate.of(List.of(
                // 1,000 events/s, 10 s lost + 5 s down = 15,000 events caught up in 20 - 5 = 15 s: 1,000 + 1,000 = 2,000/s
                experiment(1000, 110, 100, 1, 5, 1, 1_000_000, 20, true),
                // 500 events/s, 5 s lost + 5 s down = 5,000 events "caught up" in 10 s (the wait for a window): 1,000/s,
                // a lower bound that the 2,000/s above beats
                experiment(500, 405, 400, 1, 5, 1, 1_000_000, 15, true),
                experiment(1000, 210, 205, 2, 6, 2, 1_000_000, 7, true), // back 1 s after running: no catch-up figure
                experiment(9000, 310, 300, 9, 99, 9, 5, 400, false))); // not back: left out
        assertThat(f).isNotNull();
        assertThat((double) f.get("detection_s")).isEqualTo(1.0); // median of 1, 1, 2
        assertThat((double) f.get("restart_s")).isEqualTo(3.0); // median of (5 - 1 - 1) twice and (6 - 2 - 2)
        assertThat((double) f.get("state_bytes")).isEqualTo(1_000_000.0);
        assertThat((double) f.get("restore_bytes_per_s")).isEqualTo(1_000_000.0); // median of 1, 1 and 0.5 MB/s
        assertThat((double) f.get("max_throughput")).isCloseTo(2000.0, within(1e-9));
    }

    @Test
    void theThroughputWithABacklogIsNeverBelowWhatTheJobKeptUpWith() {
        var f = RecoveryFiguresEstimate.of(List.of(experiment(5000, 110, 109, 1, 5, 1, 1000, 5.5, true)));
        assertThat((double) f.get("max_throughput")).isEqualTo(5500.0);
        assertThat(RecoveryFiguresEstimate.of(List.of(experiment(5000, 110, 109, 1, 5, 1, 1000, 500, false)))).isNull();
    }
}
