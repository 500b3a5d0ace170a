/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.jni;

import java.io.IOException;

/**
 * A new object cannot be placed: fewer usable storage nodes, or failure domains, are live than
 * the object has fragments ({@code k + m}). Thrown by the native side ({@link
 * FragstateNative#createWriter}, {@link FragstateNative#awaitPlacement}) with the counts as
 * fields, so that callers decide on the type and the numbers, never on the message text.
 */
public class PlacementException extends IOException {

    private static final long serialVersionUID = 1L;

    private final int neededFragments;
    private final int dataFragments;
    private final int parityFragments;
    private final int usableNodes;
    private final int failureDomains;

    /** The constructor the native side calls (its JNI signature is part of the contract). */
    public PlacementException(
            String message,
            int neededFragments,
            int dataFragments,
            int parityFragments,
            int usableNodes,
            int failureDomains) {
        super(message);
        this.neededFragments = neededFragments;
        this.dataFragments = dataFragments;
        this.parityFragments = parityFragments;
        this.usableNodes = usableNodes;
        this.failureDomains = failureDomains;
    }

    /** Fragments of one object, {@code k + m}: each needs a node of its own failure domain. */
    public int getNeededFragments() {
        return neededFragments;
    }

    /** k. */
    public int getDataFragments() {
        return dataFragments;
    }

    /** m. */
    public int getParityFragments() {
        return parityFragments;
    }

    /** Live storage nodes that could take a fragment (the writer's own node is not counted). */
    public int getUsableNodes() {
        return usableNodes;
    }

    /** Distinct failure domains among the usable nodes. */
    public int getFailureDomains() {
        return failureDomains;
    }
}
