package io.fragstate.traffic;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class GeoTest {
    private static double dms(int d, int m, double s) {
        return Math.signum(d) * (Math.abs(d) + m / 60.0 + s / 3600.0);
    }

    @Test
    void vincentyReferenceLineFlindersPeakToBuninyong() {
        // The worked example of Vincenty (1975) / Geoscience Australia: 54,972.271 m.
        double d = Geo.distanceMeters(dms(-37, 57, 3.72030), dms(144, 25, 29.52440),
                dms(-37, 39, 10.15610), dms(143, 55, 35.38390));
        assertThat(d).isCloseTo(54972.271, within(0.001));
    }

    @Test
    void oneDegreeOfLatitudeAtTheEquator() {
        assertThat(Geo.distanceMeters(0, 0, 1, 0)).isCloseTo(110574.389, within(0.01));
    }

    @Test
    void alongTheEquatorIsTheSemiMajorArc() {
        // cos^2(alpha) = 0 on the equator: the special case of the formula
        assertThat(Geo.distanceMeters(0, 0, 0, 1)).isCloseTo(Geo.WGS84_A * Math.PI / 180, within(1e-6));
    }

    @Test
    void zeroAndSymmetric() {
        assertThat(Geo.distanceMeters(52.5, 13.4, 52.5, 13.4)).isZero();
        double ab = Geo.distanceMeters(52.51623, 13.38532, 52.52, 13.40);
        double ba = Geo.distanceMeters(52.52, 13.40, 52.51623, 13.38532);
        assertThat(ab).isCloseTo(ba, within(1e-9));
        // short Berlin distance, plausibility against a spherical estimate (~1,064 m)
        assertThat(ab).isBetween(1000.0, 1130.0);
    }

    @Test
    void deterministicBitForBit() {
        double first = Geo.distanceMeters(52.51534, 13.38443, 52.51444, 13.38478);
        for (int i = 0; i < 20_000; i++) { // long enough for the JIT to compile the method
            assertThat(Double.doubleToRawLongBits(Geo.distanceMeters(52.51534, 13.38443, 52.51444, 13.38478)))
                    .isEqualTo(Double.doubleToRawLongBits(first));
        }
    }
}
