package io.fragstate.generator;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Number of active vehicles per simulated second, in the Daedalus format: a header
 * {@code second|count}, then lines {@code <second>|<count>} for seconds 0, 1, 2, ... A run longer
 * than the profile wraps around.
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

    public static RateProfile read(Path file) throws IOException {
        List<Integer> list = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
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
                        throw new IOException(file + ":" + no + ": expected second " + list.size()
                                + " with a non-negative count, got '" + line + "'");
                    }
                    list.add(count);
                } catch (NumberFormatException e) {
                    throw new IOException(file + ":" + no + ": expected '<second>|<count>', got '" + line + "'");
                }
            }
        }
        return new RateProfile(list.stream().mapToInt(Integer::intValue).toArray(), file.toString());
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
