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
import java.util.Locale;
import java.util.Properties;

/**
 * Loads {@code libfragstate.so} once per JVM.
 *
 * <p>The plugin jar carries the library at {@value #RESOURCE}; it is copied into a new private
 * temporary directory (mode 0700, so no other user can swap the file between the copy and the
 * load) and {@code System.load}ed from there (a library inside a jar cannot be mapped directly).
 *
 * <p>Once per JVM, not per class loader: the static flags below exist once per copy of this
 * class, and a second copy of the plugin (in a job's fat jar, or in both {@code lib/} and
 * {@code plugins/}) would start a second native node in the same process. The first copy to load
 * records itself in the JVM-wide system property {@value #OWNER_PROPERTY}; any other copy is
 * refused with an error that says which jar to remove. The system
 * property {@value #PATH_PROPERTY} names a library file to load instead (development: point it at
 * {@code target/release/libfragstate.so}). The Reed–Solomon code is compiled for x86-64 with
 * AVX2, so other platforms and older CPUs get a clear error here instead of a SIGILL later.
 */
public final class NativeLibrary {

    public static final String PATH_PROPERTY = "fragstate.native.path";
    /** JVM-wide record of the class loader whose copy of this class loaded the library. */
    static final String OWNER_PROPERTY = "fragstate.native.loadedBy";
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
                claimJvm(System.getProperties(), describe(NativeLibrary.class.getClassLoader()));
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
        Path dir = Files.createTempDirectory("fragstate-native-"); // 0700 on POSIX file systems
        Path tmp = dir.resolve("libfragstate.so");
        try (InputStream in = NativeLibrary.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new UnsatisfiedLinkError(
                        "fragstate: the plugin jar has no "
                                + RESOURCE
                                + " (it was built without the Rust library); rebuild with cargo"
                                + " on PATH or set -D"
                                + PATH_PROPERTY);
            }
            Files.copy(in, tmp); // a new file in a new directory: nothing to replace
            System.load(tmp.toString());
        } finally {
            // The mapping survives the unlink; nothing is left behind in /tmp.
            Files.deleteIfExists(tmp);
            Files.deleteIfExists(dir);
        }
    }

    /**
     * Records {@code owner} as the JVM's one loader of the library in {@code props} (the system
     * properties), or fails if another copy of the plugin did so first.
     */
    static void claimJvm(Properties props, String owner) {
        Object first = props.putIfAbsent(OWNER_PROPERTY, owner);
        if (first != null && !first.equals(owner)) {
            throw new UnsatisfiedLinkError(
                    "fragstate: the native library is already loaded in this JVM by another copy of"
                            + " the fragstate plugin ("
                            + first
                            + "); this copy ("
                            + owner
                            + ") would start a second fragstate node in the same process. Keep only"
                            + " the jar in Flink's lib/ directory: remove fragstate from the job's"
                            + " jar and from plugins/.");
        }
    }

    private static String describe(ClassLoader loader) {
        return loader == null
                ? "the bootstrap class loader"
                : loader.getClass().getName() + "@" + Integer.toHexString(System.identityHashCode(loader));
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
