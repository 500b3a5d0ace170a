/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.jni;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads {@code libfragstate.so} once per JVM.
 *
 * <p>The plugin jar carries the library at {@value #RESOURCE}; it is copied to a temp file and
 * {@code System.load}ed from there (a library inside a jar cannot be mapped directly). The system
 * property {@value #PATH_PROPERTY} names a library file to load instead (development: point it at
 * {@code target/release/libfragstate.so}). The Reed–Solomon code is compiled for x86-64 with
 * AVX2, so other platforms and older CPUs get a clear error here instead of a SIGILL later.
 */
public final class NativeLibrary {

    public static final String PATH_PROPERTY = "fragstate.native.path";
    static final String RESOURCE = "/native/linux-x86_64/libfragstate.so";

    private static final Object LOCK = new Object();
    private static volatile boolean loaded;
    private static volatile Throwable failure;

    private NativeLibrary() {}

    /** Loads the library if that has not happened yet; rethrows the first failure on every call. */
    public static void load() {
        if (loaded) {
            return;
        }
        synchronized (LOCK) {
            if (loaded) {
                return;
            }
            if (failure != null) {
                throw new UnsatisfiedLinkError(
                        "fragstate: the native library failed to load earlier: " + failure.getMessage());
            }
            try {
                doLoad();
                loaded = true;
            } catch (Throwable t) {
                failure = t;
                if (t instanceof UnsatisfiedLinkError) {
                    throw (UnsatisfiedLinkError) t;
                }
                UnsatisfiedLinkError e = new UnsatisfiedLinkError("fragstate: " + t.getMessage());
                e.initCause(t);
                throw e;
            }
        }
    }

    private static void doLoad() throws IOException {
        String override = System.getProperty(PATH_PROPERTY);
        if (override != null && !override.isBlank()) {
            Path p = Paths.get(override).toAbsolutePath();
            if (!Files.isReadable(p)) {
                throw new UnsatisfiedLinkError(
                        "fragstate: -D" + PATH_PROPERTY + "=" + override + " names no readable file");
            }
            checkPlatform(System.getProperty("os.name"), System.getProperty("os.arch"));
            checkCpu();
            System.load(p.toString());
            return;
        }
        checkPlatform(System.getProperty("os.name"), System.getProperty("os.arch"));
        checkCpu();
        Path tmp = Files.createTempFile("libfragstate-", ".so");
        try (InputStream in = NativeLibrary.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new UnsatisfiedLinkError(
                        "fragstate: the plugin jar has no "
                                + RESOURCE
                                + " (it was built without the Rust library); rebuild with cargo"
                                + " on PATH or set -D"
                                + PATH_PROPERTY);
            }
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
        }
        try {
            System.load(tmp.toString());
        } finally {
            // The mapping survives the unlink; nothing is left behind in /tmp.
            Files.deleteIfExists(tmp);
        }
    }

    /** Fails unless this is Linux on x86-64, the only platform the jar carries a library for. */
    static void checkPlatform(String osName, String osArch) {
        String os = osName == null ? "" : osName.toLowerCase(Locale.ROOT);
        String arch = osArch == null ? "" : osArch.toLowerCase(Locale.ROOT);
        boolean x86 = arch.equals("amd64") || arch.equals("x86_64");
        if (!os.startsWith("linux") || !x86) {
            throw new UnsatisfiedLinkError(
                    "fragstate: the native library is built for linux-x86_64 only, this JVM runs on "
                            + osName
                            + "/"
                            + osArch);
        }
    }

    private static void checkCpu() throws IOException {
        Path cpuinfo = Paths.get("/proc/cpuinfo");
        if (!Files.isReadable(cpuinfo)) {
            return; // cannot tell; the library itself will fail loudly if AVX2 is missing
        }
        checkAvx2(new String(Files.readAllBytes(cpuinfo), StandardCharsets.US_ASCII));
    }

    /** Fails unless the {@code flags} line of {@code /proc/cpuinfo} lists {@code avx2}. */
    static void checkAvx2(String cpuinfo) {
        for (String line : cpuinfo.split("\n")) {
            if (line.startsWith("flags")) {
                int colon = line.indexOf(':');
                String flags = " " + (colon >= 0 ? line.substring(colon + 1) : line).trim() + " ";
                if (flags.contains(" avx2 ")) {
                    return;
                }
                throw new UnsatisfiedLinkError(
                        "fragstate: this CPU lacks AVX2, which the Reed–Solomon SIMD code of"
                                + " libfragstate.so needs (x86-64 from Intel Haswell / AMD"
                                + " Excavator on)");
            }
        }
    }
}
