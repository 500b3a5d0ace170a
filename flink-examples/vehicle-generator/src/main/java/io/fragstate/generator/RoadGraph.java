package io.fragstate.generator;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fragstate.traffic.Geo;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An undirected road graph in the Daedalus JSON format:
 * {@code {"nodes":[{"id","latitude","longitude"}...], "edges":[{"source","target"}...]}}.
 * Node order and edge order are kept as in the file, so that a seed always gives the same routes.
 */
public final class RoadGraph {
    /** Classpath location of the built-in graph (a copy of Daedalus' berlin-mitte.json, Apache-2.0). */
    public static final String BUILT_IN = "/io/fragstate/generator/berlin-mitte.json";

    private final String[] ids;
    private final double[] lat;
    private final double[] lon;
    private final int[][] neighbours;
    private final int[] routable;

    private RoadGraph(String[] ids, double[] lat, double[] lon, int[][] neighbours) {
        this.ids = ids;
        this.lat = lat;
        this.lon = lon;
        this.neighbours = neighbours;
        List<Integer> r = new ArrayList<>();
        for (int i = 0; i < ids.length; i++) {
            if (neighbours[i].length > 0) {
                r.add(i);
            }
        }
        this.routable = r.stream().mapToInt(Integer::intValue).toArray();
    }

    public static RoadGraph builtIn() {
        try (InputStream in = RoadGraph.class.getResourceAsStream(BUILT_IN)) {
            if (in == null) {
                throw new IllegalStateException("built-in road graph " + BUILT_IN + " missing from the classpath");
            }
            return read(in, "built-in berlin-mitte.json");
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the built-in road graph", e);
        }
    }

    public static RoadGraph read(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            return read(in, file.toString());
        }
    }

    public static RoadGraph read(InputStream in, String source) throws IOException {
        JsonNode root = new ObjectMapper().readTree(in);
        JsonNode nodes = root == null ? null : root.get("nodes");
        JsonNode edges = root == null ? null : root.get("edges");
        if (nodes == null || !nodes.isArray() || edges == null || !edges.isArray()) {
            throw new IOException(source + ": expected an object with arrays 'nodes' and 'edges'");
        }
        int n = nodes.size();
        String[] ids = new String[n];
        double[] lat = new double[n];
        double[] lon = new double[n];
        Map<String, Integer> index = new HashMap<>();
        for (int i = 0; i < n; i++) {
            JsonNode node = nodes.get(i);
            JsonNode id = node.get("id");
            JsonNode la = node.get("latitude");
            JsonNode lo = node.get("longitude");
            if (id == null || la == null || !la.isNumber() || lo == null || !lo.isNumber()) {
                throw new IOException(source + ": node #" + i + " needs 'id', numeric 'latitude' and 'longitude'");
            }
            ids[i] = id.asText();
            lat[i] = la.doubleValue();
            lon[i] = lo.doubleValue();
            if (index.put(ids[i], i) != null) {
                throw new IOException(source + ": duplicate node id '" + ids[i] + "'");
            }
        }
        List<List<Integer>> adj = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            adj.add(new ArrayList<>());
        }
        for (int i = 0; i < edges.size(); i++) {
            JsonNode e = edges.get(i);
            Integer s = e.get("source") == null ? null : index.get(e.get("source").asText());
            Integer t = e.get("target") == null ? null : index.get(e.get("target").asText());
            if (s == null || t == null) {
                throw new IOException(source + ": edge #" + i + " refers to an unknown node: " + e);
            }
            if (s.equals(t) || adj.get(s).contains(t)) {
                continue; // self loops and duplicates carry no route
            }
            adj.get(s).add(t);
            adj.get(t).add(s);
        }
        int[][] neighbours = new int[n][];
        for (int i = 0; i < n; i++) {
            neighbours[i] = adj.get(i).stream().mapToInt(Integer::intValue).toArray();
        }
        RoadGraph g = new RoadGraph(ids, lat, lon, neighbours);
        if (g.routable.length == 0) {
            throw new IOException(source + ": the graph has no edges");
        }
        return g;
    }

    public int size() {
        return ids.length;
    }

    public double lat(int node) {
        return lat[node];
    }

    public double lon(int node) {
        return lon[node];
    }

    public int[] neighbours(int node) {
        return neighbours[node];
    }

    /** Nodes with at least one edge, where a vehicle can start. */
    public int[] routableNodes() {
        return routable;
    }

    public double edgeLengthMeters(int a, int b) {
        return Geo.distanceMeters(lat[a], lon[a], lat[b], lon[b]);
    }
}
