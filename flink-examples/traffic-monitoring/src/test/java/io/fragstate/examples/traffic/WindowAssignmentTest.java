package io.fragstate.examples.traffic;

import static org.assertj.core.api.Assertions.assertThat;

import io.fragstate.traffic.TrafficLogic;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.junit.jupiter.api.Test;

/** The reference computation's window arithmetic must be Flink's own. */
class WindowAssignmentTest {
    @Test
    void sameWindowStartAsFlink() {
        SplittableRandom r = new SplittableRandom(7);
        for (int i = 0; i < 100_000; i++) {
            long ts = r.nextLong(-100_000_000L, 4_000_000_000_000L);
            assertThat(TrafficLogic.windowStart(ts, TrafficLogic.WINDOW_OFFSET_MS, TrafficLogic.WINDOW_SIZE_MS))
                    .as("ts=%d", ts)
                    .isEqualTo(TimeWindow.getWindowStartWithOffset(ts, TrafficLogic.WINDOW_OFFSET_MS, TrafficLogic.WINDOW_SIZE_MS));
        }
    }

    @Test
    void malformedRecordsAreDroppedNotFatal() {
        assertThat(VehicleEventDeserializer.parseOrNull(null)).isNull();
        assertThat(VehicleEventDeserializer.parseOrNull("{]".getBytes(StandardCharsets.UTF_8))).isNull();
        assertThat(VehicleEventDeserializer.parseOrNull(
                "{\"lp\":\"B-A 1\",\"pt\":{\"lt\":52.5,\"lg\":13.4},\"ts\":5}".getBytes(StandardCharsets.UTF_8)).lp)
                .isEqualTo("B-A 1");
    }
}
