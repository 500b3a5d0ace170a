package io.fragstate.traffic;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

class VehicleEventTest {
    @Test
    void parsesTheDaedalusFormat() {
        VehicleEvent e = VehicleEvent.parse("{\"lp\":\"B-AB 123\",\"pt\":{\"lt\":52.51623,\"lg\":13.38532},\"ts\":1700000000123}");
        assertThat(e).isEqualTo(new VehicleEvent("B-AB 123", 52.51623, 13.38532, 1_700_000_000_123L));
    }

    @Test
    void roundTripsExactly() {
        VehicleEvent e = new VehicleEvent("HH-Q 9", 52.513456789012345, 13.381234567890123, 42);
        assertThat(VehicleEvent.parse(e.toJson())).isEqualTo(e);
    }

    @Test
    void rejectsMalformedInputWithAClearMessage() {
        assertThatThrownBy(() -> VehicleEvent.parse("nope")).hasMessageContaining("not JSON");
        assertThatThrownBy(() -> VehicleEvent.parse("[1]")).hasMessageContaining("not a JSON object");
        assertThatThrownBy(() -> VehicleEvent.parse("{\"pt\":{\"lt\":1,\"lg\":2},\"ts\":1}")).hasMessageContaining("'lp'");
        assertThatThrownBy(() -> VehicleEvent.parse("{\"lp\":\"a\",\"pt\":{\"lt\":1},\"ts\":1}")).hasMessageContaining("pt.lg");
        assertThatThrownBy(() -> VehicleEvent.parse("{\"lp\":\"a\",\"pt\":{\"lt\":1,\"lg\":2},\"ts\":1.5}")).hasMessageContaining("'ts'");
    }

    @Test
    void notificationIsStableJson() {
        String n = Notification.format(new WindowSummary(11_000, "B-X 1", 52.5, 13.4, 42, 7), "bus");
        assertThat(n).isEqualTo("{\"windowEnd\":11000,\"lp\":\"B-X 1\",\"vehicleType\":\"bus\",\"speedKmh\":42,"
                + "\"reports\":7,\"last\":{\"lt\":52.5,\"lg\":13.4}}");
    }

    @Test
    void registryReadsAndWritesCsv() throws Exception {
        VehicleRegistry r = new VehicleRegistry(Map.of("B-X 1", "bus"));
        StringWriter w = new StringWriter();
        r.write(w);
        VehicleRegistry back = VehicleRegistry.read(
                new ByteArrayInputStream(w.toString().getBytes(StandardCharsets.UTF_8)), "test");
        assertThat(back.typeOf("B-X 1")).isEqualTo("bus");
        assertThat(back.typeOf("B-Y 2")).isEqualTo(VehicleRegistry.UNREGISTERED);
        assertThatThrownBy(() -> VehicleRegistry.read(
                new ByteArrayInputStream("lp,type\nbroken\n".getBytes(StandardCharsets.UTF_8)), "reg.csv"))
                .hasMessageContaining("reg.csv:2");
    }
}
