/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.jni;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Properties;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The platform and CPU checks that run before the library is mapped, and one library per JVM. */
class NativeLibraryTest {

    @Test
    void acceptsLinuxX86() {
        assertThatCode(() -> NativeLibrary.checkPlatform("Linux", "amd64")).doesNotThrowAnyException();
        assertThatCode(() -> NativeLibrary.checkPlatform("Linux", "x86_64")).doesNotThrowAnyException();
    }

    @Test
    void rejectsOtherPlatforms() {
        assertThatThrownBy(() -> NativeLibrary.checkPlatform("Mac OS X", "aarch64"))
                .isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessageContaining("linux-x86_64 only")
                .hasMessageContaining("Mac OS X/aarch64");
        assertThatThrownBy(() -> NativeLibrary.checkPlatform("Linux", "aarch64"))
                .isInstanceOf(UnsatisfiedLinkError.class);
    }

    @Test
    void requiresAvx2() {
        assertThatCode(() -> NativeLibrary.checkAvx2("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 bmi2\n"))
                .doesNotThrowAnyException();
        assertThatThrownBy(() -> NativeLibrary.checkAvx2("processor\t: 0\nflags\t\t: fpu sse2 avx avx512f\n"))
                .isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessageContaining("AVX2");
    }

    @Test
    void theFirstLoaderOwnsTheJvmAndOthersAreRefusedNamingBoth() {
        Properties props = new Properties();
        NativeLibrary.claimJvm(props, "loader-a");
        assertThatCode(() -> NativeLibrary.claimJvm(props, "loader-a")).doesNotThrowAnyException();
        assertThatThrownBy(() -> NativeLibrary.claimJvm(props, "loader-b"))
                .isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessageContaining("(loader-a)")
                .hasMessageContaining("(loader-b)")
                .hasMessageContaining("lib/");
    }

    @Test
    void aSecondCopyOfThePluginInAnotherClassLoaderIsRefused() throws Exception {
        NativeLibrary.load();
        URL classes = NativeLibrary.class.getProtectionDomain().getCodeSource().getLocation();
        try (URLClassLoader other = new URLClassLoader(new URL[] {classes}, ClassLoader.getPlatformClassLoader())) {
            Class<?> copy = other.loadClass(NativeLibrary.class.getName());
            assertThat(copy).isNotSameAs(NativeLibrary.class);
            Method load = copy.getMethod("load");
            assertThatThrownBy(() -> load.invoke(null))
                    .isInstanceOf(InvocationTargetException.class)
                    .cause()
                    .isInstanceOf(UnsatisfiedLinkError.class)
                    .hasMessageContaining("already loaded in this JVM by another copy");
        }
    }
}
