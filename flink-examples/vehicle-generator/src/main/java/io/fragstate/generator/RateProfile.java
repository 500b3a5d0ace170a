package io.fragstate.generator;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Number of active vehicles per simulated second, in the Daedalus format: a header
 * {@code second|count}, then lines {@code <second>|<count>} for seconds 0, 1, 2, ... A run longer
 * than the profile wraps around. {@link #daedalus()} is the original Daedalus profile (embedded);
 * {@link #compressed} squeezes a profile's time axis so that a long load shape fits a short run.
 */
public final class RateProfile {
    private final int[] counts;
    private final String name;

    private RateProfile(int[] counts, String name) {
        if (counts.length == 0) {
            throw new IllegalArgumentException(name + ": empty rate profile");
        }
        this.counts = counts;
        this.name = name;
    }

    /**
     * The built-in profile: one hour with a slow swell and a faster rush-hour wave,
     * between about 300 and 1,000 vehicles (before the scale factor).
     */
    public static RateProfile builtIn() {
        int[] c = new int[3600];
        for (int s = 0; s < c.length; s++) {
            double slow = StrictMath.sin(2 * StrictMath.PI * s / 3600.0);
            double wave = StrictMath.sin(2 * StrictMath.PI * s / 600.0);
            c[s] = (int) StrictMath.round(650 + 250 * slow + 100 * wave * wave);
        }
        return new RateProfile(c, "built-in");
    }

    /** The same count in every second (e.g. events per second of a constant-rate run). */
    public static RateProfile constant(int count) {
        if (count < 0) {
            throw new IllegalArgumentException("a constant rate must not be negative, got " + count);
        }
        return new RateProfile(new int[] {count}, "constant " + count + "/s");
    }

    /** The name {@code --profile} accepts for {@link #daedalus()}. */
    public static final String DAEDALUS = "daedalus";

    private static final String DAEDALUS_RESOURCE = "tm_6h_100K_max.csv";

    /**
     * The Daedalus experiments' Traffic Monitoring profile {@code tm_6h_100K_max.csv} (25,000
     * seconds, 0 to 99,989 vehicles; embedded, see NOTICE-tm_6h_100K_max.txt).
     */
    public static RateProfile daedalus() {
        try (InputStream in = RateProfile.class.getResourceAsStream(DAEDALUS_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(DAEDALUS_RESOURCE + " is missing from the generator's classpath");
            }
            return parse(new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8)), DAEDALUS);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A profile file, or {@value #DAEDALUS} for the embedded {@link #daedalus()} profile. */
    public static RateProfile read(Path file) throws IOException {
        if (file.toString().equals(DAEDALUS)) {
            return daedalus();
        }
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            return parse(r, file.toString());
        }
    }

    private static RateProfile parse(BufferedReader r, String name) throws IOException {
        List<Integer> list = new ArrayList<>();
        String line;
        int no = 0;
        while ((line = r.readLine()) != null) {
            no++;
            String t = line.strip();
            if (t.isEmpty() || (no == 1 && t.equals("second|count"))) {
                continue;
            }
            int bar = t.indexOf('|');
            try {
                if (bar < 0) {
                    throw new NumberFormatException("no '|'");
                }
                int second = Integer.parseInt(t.substring(0, bar).strip());
                int count = Integer.parseInt(t.substring(bar + 1).strip());
                if (second != list.size() || count < 0) {
                    throw new IOException(name + ":" + no + ": expected second " + list.size()
                            + " with a non-negative count, got '" + line + "'");
                }
                list.add(count);
            } catch (NumberFormatException e) {
                throw new IOException(name + ":" + no + ": expected '<second>|<count>', got '" + line + "'");
            }
        }
        return new RateProfile(list.stream().mapToInt(Integer::intValue).toArray(), name);
    }

    /**
     * This profile with its time axis squeezed {@code factor} times: second {@code s} holds the
     * mean count of seconds {@code [s·factor, (s+1)·factor)} (rounded; the last one averages what
     * is left), so the shape of the whole profile plays in {@code length / factor} seconds at the
     * same vehicle counts. Factor 1 is this profile.
     */
    public RateProfile compressed(int factor) {
        if (factor < 1 || factor > counts.length) {
            throw new IllegalArgumentException("profile compression must be between 1 and the profile's length "
                    + counts.length + ", got " + factor);
        }
        if (factor == 1) {
            return this;
        }
        int[] c = new int[(counts.length + factor - 1) / factor];
        for (int s = 0; s < c.length; s++) {
            long sum = 0;
            int from = s * factor;
            int to = Math.min(counts.length, from + factor);
            for (int i = from; i < to; i++) {
                sum += counts[i];
            }
            c[s] = (int) Math.round((double) sum / (to - from));
        }
        return new RateProfile(c, name + " compressed " + factor + "x");
    }

    public int length() {
        return counts.length;
    }

    public int count(long second) {
        return counts[(int) (second % counts.length)];
    }

    public String name() {
        return name;
    }
}
