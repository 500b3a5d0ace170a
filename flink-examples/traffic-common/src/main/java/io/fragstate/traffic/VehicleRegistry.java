package io.fragstate.traffic;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Serializable;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The reference table of the enrichment: licence plate to vehicle type, stored as CSV lines
 * {@code plate,type} (a header line {@code lp,type} and lines starting with {@code #} are skipped).
 * Plates that are not in the table enrich to {@link #UNREGISTERED}.
 */
public final class VehicleRegistry implements Serializable {
    private static final long serialVersionUID = 1L;
    public static final String UNREGISTERED = "unregistered";

    private final Map<String, String> typeByPlate;

    public VehicleRegistry(Map<String, String> typeByPlate) {
        this.typeByPlate = Collections.unmodifiableMap(new LinkedHashMap<>(typeByPlate));
    }

    public static VehicleRegistry empty() {
        return new VehicleRegistry(Map.of());
    }

    public String typeOf(String plate) {
        return typeByPlate.getOrDefault(plate, UNREGISTERED);
    }

    public int size() {
        return typeByPlate.size();
    }

    public Map<String, String> asMap() {
        return typeByPlate;
    }

    /** Reads the CSV form; {@code source} only names the input in error messages. */
    public static VehicleRegistry read(InputStream in, String source) throws IOException {
        Map<String, String> map = new LinkedHashMap<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            int no = 0;
            while ((line = r.readLine()) != null) {
                no++;
                String t = line.strip();
                if (t.isEmpty() || t.startsWith("#") || (no == 1 && t.equals("lp,type"))) {
                    continue;
                }
                int comma = t.lastIndexOf(',');
                if (comma <= 0 || comma == t.length() - 1) {
                    throw new IOException(source + ":" + no + ": expected 'plate,type' but got '" + line + "'");
                }
                map.put(t.substring(0, comma).strip(), t.substring(comma + 1).strip());
            }
        }
        return new VehicleRegistry(map);
    }

    /** Writes the CSV form (with header). */
    public void write(Writer w) throws IOException {
        w.write("lp,type\n");
        for (Map.Entry<String, String> e : typeByPlate.entrySet()) {
            w.write(e.getKey() + "," + e.getValue() + "\n");
        }
        w.flush();
    }
}
