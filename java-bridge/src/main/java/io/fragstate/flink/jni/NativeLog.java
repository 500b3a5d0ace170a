/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.jni;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Receives the Rust core's {@code tracing} events (called from native threads through JNI, see
 * {@code rust-core/jni/src/log.rs}) and hands them to SLF4J, so they land in the JobManager and
 * TaskManager logs. The logger name is {@code fragstate.} plus the Rust module path, with
 * {@code ::} turned into dots, e.g. {@code fragstate.fragstate_client.writer}.
 */
final class NativeLog {

    private NativeLog() {}

    /** Levels as sent by the native side: 0 trace, 1 debug, 2 info, 3 warn, 4 error. */
    static void log(int level, String target, String message) {
        Logger log = LoggerFactory.getLogger("fragstate." + target.replace("::", "."));
        switch (level) {
            case 4:
                log.error(message);
                break;
            case 3:
                log.warn(message);
                break;
            case 2:
                log.info(message);
                break;
            case 1:
                log.debug(message);
                break;
            default:
                log.trace(message);
        }
    }
}
