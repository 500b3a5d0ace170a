/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink.fs;

import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystemBehaviorTestSuite;
import org.apache.flink.core.fs.FileSystemKind;
import org.apache.flink.core.fs.Path;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Flink's own behaviour suite against {@code fragstate://} on the embedded mesh.
 *
 * <p>fragstate is an object store (directories are implicit), so the suite skips its two
 * "mkdirs fails below/at a file" cases for that kind. fragstate does implement both checks, so
 * they run here anyway: one by overriding the suite's (protected) test without its assumption,
 * the other as {@link #mkdirsFailsWithExistingParentFile}.
 */
class FragstateFileSystemBehaviorTest extends FileSystemBehaviorTestSuite {

    private static final Path BASE = new Path("fragstate://fs-behaviour/suite");

    @Override
    protected FileSystem getFileSystem() throws Exception {
        return BASE.getFileSystem();
    }

    @Override
    protected Path getBasePath() {
        return BASE;
    }

    @Override
    protected FileSystemKind getFileSystemKind() {
        return FileSystemKind.OBJECT_STORE;
    }

    @Test
    @Override
    protected void testMkdirsFailsForExistingFile() throws Exception {
        FileSystem fs = getFileSystem();
        Path file = new Path(BASE, "file-" + UUID.randomUUID());
        write(fs, file);
        try {
            assertThatThrownBy(() -> fs.mkdirs(file)).isInstanceOf(IOException.class);
        } finally {
            fs.delete(file, false);
        }
    }

    @Test
    void mkdirsFailsWithExistingParentFile() throws Exception {
        FileSystem fs = getFileSystem();
        Path file = new Path(BASE, "file-" + UUID.randomUUID());
        write(fs, file);
        try {
            assertThatThrownBy(() -> fs.mkdirs(new Path(file, "below/deeper"))).isInstanceOf(IOException.class);
        } finally {
            fs.delete(file, false);
        }
    }

    private static void write(FileSystem fs, Path file) throws IOException {
        try (FSDataOutputStream out = fs.create(file, FileSystem.WriteMode.NO_OVERWRITE)) {
            out.write(new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
        }
    }
}
