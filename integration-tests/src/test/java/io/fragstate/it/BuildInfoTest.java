package io.fragstate.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A soak's summary names what it was built from and ran on. */
class BuildInfoTest {
    @Test
    void theCpuModelIsTheFirstModelNameLine() {
        List<String> cpuinfo = List.of("processor\t: 0", "vendor_id\t: GenuineIntel",
                "model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "processor\t: 1", "model name\t: other");
        assertThat(BuildInfo.modelName(cpuinfo)).isEqualTo("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz");
        assertThat(BuildInfo.modelName(List.of("processor\t: 0"))).isEqualTo(BuildInfo.UNKNOWN);
    }

    @Test
    void outsideAGitCheckoutTheCommitIsUnknownNotAFailure() {
        BuildInfo b = BuildInfo.of(Path.of("/"));
        assertThat(b.commit()).isEqualTo(BuildInfo.UNKNOWN);
        assertThat(b.cores()).isPositive();
        assertThat(b.describe()).contains("built from unknown");
    }

    @Test
    void inThisCheckoutTheCommitIsNamed() {
        // the tests run from integration-tests/, inside the repository's checkout
        assertThat(BuildInfo.of(Path.of("..")).commit()).isNotEqualTo(BuildInfo.UNKNOWN).matches("[0-9a-f]{7,}(-dirty)?");
    }
}
