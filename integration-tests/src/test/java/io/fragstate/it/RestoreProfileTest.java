package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The CPU profile's summary of {@code perf report}: idle left out, JIT code one object, shares of the busy samples. */
class RestoreProfileTest {
    @Test
    @SuppressWarnings("unchecked")
    void aRealReportIsSummedByObjectOverTheBusySamples() throws Exception {
        String report;
        try (var in = RestoreProfileTest.class.getResourceAsStream("/perf-report-restore.txt")) {
            report = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Map<String, Object> p = RestoreProfile.summarize(report);
        // swapper (idle) took 41.97 % of that recovery's samples; the rest is what was busy
        assertThat((double) p.get("busyPercentOfAllSamples")).isEqualTo(58.0);
        Map<String, Double> byObject = (Map<String, Double>) p.get("byObject");
        assertThat(byObject).containsKeys("libjvm.so", "libfragstate.so", "[JIT]", "[kernel.kallsyms]")
                .doesNotContainKey("libfragstate.so (deleted)");
        assertThat(byObject.keySet()).noneMatch(k -> k.startsWith("[JIT] tid"));
        // the rows under 0.5 % are not in the report: the listed ones are 36.6 of the 58.03 % busy
        assertThat(byObject.values().stream().mapToDouble(Double::doubleValue).sum()).isBetween(60.0, 66.0);
        assertThat(byObject.get("libjvm.so")).isGreaterThan(byObject.get("libfragstate.so"));
        List<Map<String, Object>> rows = (List<Map<String, Object>>) p.get("byThreadAndObject");
        assertThat(rows).noneMatch(r -> r.get("thread").equals("swapper"))
                .anyMatch(r -> r.get("thread").equals("C1 CompilerThre") && r.get("object").equals("libjvm.so"));
    }

    @Test
    void anEmptyReportHasNoShares() {
        Map<String, Object> p = RestoreProfile.summarize("# nothing sampled\n");
        assertThat(p.get("busyPercentOfAllSamples")).isEqualTo(0.0);
        assertThat((Map<?, ?>) p.get("byObject")).isEmpty();
    }
}
