/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.jni;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The platform and CPU checks that run before the library is mapped. */
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
}
