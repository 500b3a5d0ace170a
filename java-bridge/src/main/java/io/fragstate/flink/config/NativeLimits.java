/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.config;

import io.fragstate.flink.jni.FragstateNative;
import io.fragstate.flink.jni.NativeLibrary;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The bounds the Rust core accepts for its numeric settings, as {@link FragstateNative#limits}
 * reports them. Java copies no bound: {@link FragstateSettings} checks every option against
 * these, so an option fails at startup naming its key exactly when the core would refuse it.
 * Read once per JVM (it loads the native library).
 */
public final class NativeLimits {

    /** An inclusive range. */
    public record Range(long min, long max) {

        public boolean contains(long value) {
            return value >= min && value <= max;
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static volatile NativeLimits loaded;

    private final Range dataFragments;
    private final Range parityFragments;
    private final Range totalFragments;
    private final Range cellSize;
    private final Range zstdLevel;
    private final Range localMeshNodes;
    private final Range storeMemory;
    private final Range scrubRate;
    private final Range adaptivePhaseMs;
    private final Range maxStorageOverhead;

    private NativeLimits(JsonNode limits) {
        this.dataFragments = range(limits, "dataFragments");
        this.parityFragments = range(limits, "parityFragments");
        this.totalFragments = range(limits, "totalFragments");
        this.cellSize = range(limits, "cellSize");
        this.zstdLevel = range(limits, "zstdLevel");
        this.localMeshNodes = range(limits, "localMeshNodes");
        this.storeMemory = range(limits, "storeMemory");
        this.scrubRate = range(limits, "scrubRate");
        this.adaptivePhaseMs = range(limits, "adaptivePhaseMs");
        this.maxStorageOverhead = range(limits, "maxStorageOverhead");
    }

    /** The limits of the loaded library (loading it on first use). */
    public static NativeLimits get() {
        NativeLimits l = loaded;
        if (l == null) {
            NativeLibrary.load();
            l = parse(FragstateNative.limits());
            loaded = l;
        }
        return l;
    }

    private static NativeLimits parse(String json) {
        try {
            return new NativeLimits(JSON.readTree(json));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("fragstate: the native library's limits are no JSON: " + json, e);
        }
    }

    private static Range range(JsonNode limits, String name) {
        JsonNode min = limits.path(name).path("min");
        JsonNode max = limits.path(name).path("max");
        if (!min.canConvertToLong() || !max.canConvertToLong()) {
            throw new IllegalStateException(
                    "fragstate: the native library reports no limit '"
                            + name
                            + "' in "
                            + limits
                            + " (is libfragstate.so from another build than the jar?)");
        }
        return new Range(min.asLong(), max.asLong());
    }

    /** k. */
    public Range dataFragments() {
        return dataFragments;
    }

    /** m. */
    public Range parityFragments() {
        return parityFragments;
    }

    /** k + m. */
    public Range totalFragments() {
        return totalFragments;
    }

    /** Bytes. */
    public Range cellSize() {
        return cellSize;
    }

    public Range zstdLevel() {
        return zstdLevel;
    }

    /** Nodes of an embedded mesh (which needs at least k + m besides). */
    public Range localMeshNodes() {
        return localMeshNodes;
    }

    /** Bytes. */
    public Range storeMemory() {
        return storeMemory;
    }

    /** Bytes per second; 0 turns the background scrub off. */
    public Range scrubRate() {
        return scrubRate;
    }

    /** Milliseconds. */
    public Range adaptivePhaseMs() {
        return adaptivePhaseMs;
    }

    /** (k+m)/k; the lower bound that applies is the configured parameters' own. */
    public Range maxStorageOverhead() {
        return maxStorageOverhead;
    }
}
