package io.fragstate.traffic;

/**
 * Geodesic distance on the WGS84 ellipsoid (Vincenty's inverse formula).
 *
 * <p>Only {@link StrictMath} is used so that the job (inside Flink, JIT-compiled) and the
 * reference computation (another JVM) produce bit-identical results: {@code Math.sin} and
 * friends may differ by an ulp between the interpreter and JIT intrinsics, which could flip a
 * point across the 1,000 m radius or change a rounded speed.
 */
public final class Geo {
    /** WGS84 semi-major axis in metres. */
    public static final double WGS84_A = 6378137.0;
    /** WGS84 flattening. */
    public static final double WGS84_F = 1 / 298.257223563;
    /** WGS84 semi-minor axis in metres. */
    public static final double WGS84_B = (1 - WGS84_F) * WGS84_A;

    private static final int MAX_ITERATIONS = 200;
    private static final double CONVERGENCE = 1e-12;

    private Geo() {}

    /**
     * Distance in metres between two points given in degrees.
     *
     * @throws ArithmeticException for nearly antipodal points, where the series does not converge
     */
    public static double distanceMeters(double lat1, double lon1, double lat2, double lon2) {
        if (lat1 == lat2 && lon1 == lon2) {
            return 0.0;
        }
        final double f = WGS84_F;
        final double a = WGS84_A;
        final double b = WGS84_B;
        final double l = StrictMath.toRadians(lon2 - lon1);
        final double u1 = StrictMath.atan((1 - f) * StrictMath.tan(StrictMath.toRadians(lat1)));
        final double u2 = StrictMath.atan((1 - f) * StrictMath.tan(StrictMath.toRadians(lat2)));
        final double sinU1 = StrictMath.sin(u1);
        final double cosU1 = StrictMath.cos(u1);
        final double sinU2 = StrictMath.sin(u2);
        final double cosU2 = StrictMath.cos(u2);

        double lambda = l;
        double sinSigma;
        double cosSigma;
        double sigma;
        double cosSqAlpha;
        double cos2SigmaM;
        int iterations = 0;
        while (true) {
            final double sinLambda = StrictMath.sin(lambda);
            final double cosLambda = StrictMath.cos(lambda);
            final double t1 = cosU2 * sinLambda;
            final double t2 = cosU1 * sinU2 - sinU1 * cosU2 * cosLambda;
            sinSigma = StrictMath.sqrt(t1 * t1 + t2 * t2);
            if (sinSigma == 0) {
                return 0.0; // coincident points
            }
            cosSigma = sinU1 * sinU2 + cosU1 * cosU2 * cosLambda;
            sigma = StrictMath.atan2(sinSigma, cosSigma);
            final double sinAlpha = cosU1 * cosU2 * sinLambda / sinSigma;
            cosSqAlpha = 1 - sinAlpha * sinAlpha;
            // on the equator cosSqAlpha is 0 and cos2SigmaM is undefined: use 0
            cos2SigmaM = cosSqAlpha != 0 ? cosSigma - 2 * sinU1 * sinU2 / cosSqAlpha : 0.0;
            final double c = f / 16 * cosSqAlpha * (4 + f * (4 - 3 * cosSqAlpha));
            final double previous = lambda;
            lambda = l + (1 - c) * f * sinAlpha
                    * (sigma + c * sinSigma * (cos2SigmaM + c * cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)));
            if (StrictMath.abs(lambda - previous) <= CONVERGENCE) {
                break;
            }
            if (++iterations >= MAX_ITERATIONS) {
                throw new ArithmeticException("Vincenty's formula did not converge for ("
                        + lat1 + ", " + lon1 + ") -> (" + lat2 + ", " + lon2 + "): nearly antipodal points");
            }
        }
        final double uSq = cosSqAlpha * (a * a - b * b) / (b * b);
        final double bigA = 1 + uSq / 16384 * (4096 + uSq * (-768 + uSq * (320 - 175 * uSq)));
        final double bigB = uSq / 1024 * (256 + uSq * (-128 + uSq * (74 - 47 * uSq)));
        final double deltaSigma = bigB * sinSigma * (cos2SigmaM + bigB / 4
                * (cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)
                - bigB / 6 * cos2SigmaM * (-3 + 4 * sinSigma * sinSigma) * (-3 + 4 * cos2SigmaM * cos2SigmaM)));
        return b * bigA * (sigma - deltaSigma);
    }
}
