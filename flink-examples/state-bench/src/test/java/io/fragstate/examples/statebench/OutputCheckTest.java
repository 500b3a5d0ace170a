package io.fragstate.examples.statebench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checker on small hand-made output directories: a correct one, and each kind of violation named. */
class OutputCheckTest {
    private static final int KEYS = 5;

    /** The correct lines for indices 0..n-1 with {@link #KEYS} keys. */
    private static List<String> correct(int n) {
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            lines.add(i + "," + (i % KEYS) + "," + (i / KEYS + 1) + ",ok");
        }
        return lines;
    }

    /** Writes the lines round-robin into three committed part files, plus hidden in-progress junk. */
    private static Path write(Path dir, List<String> lines) throws IOException {
        List<StringBuilder> parts = List.of(new StringBuilder(), new StringBuilder(), new StringBuilder());
        for (int i = 0; i < lines.size(); i++) {
            parts.get(i % 3).append(lines.get(i)).append('\n');
        }
        for (int p = 0; p < 3; p++) {
            Files.writeString(dir.resolve("part-uuid-" + p + "-0"), parts.get(p));
        }
        Files.writeString(dir.resolve(".part-uuid-0-1.inprogress.abc"), "0,0,9,BAD\n");
        Files.createDirectories(dir.resolve(".hidden"));
        Files.writeString(dir.resolve(".hidden/part-x"), "garbage\n");
        return dir;
    }

    @Test
    void acceptsCorrectOutput(@TempDir Path dir) throws IOException {
        OutputCheck.Result r = OutputCheck.check(write(dir, correct(100)), 100);
        assertThat(r.summary()).isEqualTo("OK: events 100, keys 5, max index 99, files 3");
        assertThat(r.ok()).isTrue();
    }

    @Test
    void acceptsOutputWithoutTrailingNewlineAndInSubfolders(@TempDir Path dir) throws IOException {
        Files.createDirectories(dir.resolve("bucket"));
        Files.writeString(dir.resolve("bucket/part-a"), "0,0,1,ok\n1,1,1,ok");
        Files.writeString(dir.resolve("part-b"), "2,0,2,ok\n");
        OutputCheck.Result r = OutputCheck.check(dir, -1);
        assertThat(r.summary()).isEqualTo("OK: events 3, keys 2, max index 2, files 2");
    }

    @Test
    void namesADuplicate(@TempDir Path dir) throws IOException {
        List<String> lines = correct(100);
        lines.add(lines.get(42));
        lines.add(lines.get(42));
        lines.add(lines.get(77));
        OutputCheck.Result r = OutputCheck.check(write(dir, lines), 100);
        assertThat(r.ok()).isFalse();
        assertThat(r.firstViolation()).isEqualTo("index 42 appears 3 times");
        assertThat(r.duplicates()).isEqualTo(3);
        assertThat(r.summary()).startsWith("FAILED: index 42 appears 3 times (3 duplicate, 0 missing, 0 wrong-count");
    }

    @Test
    void namesAGap(@TempDir Path dir) throws IOException {
        List<String> lines = correct(100);
        lines.remove(61);
        lines.remove(30);
        OutputCheck.Result r = OutputCheck.check(write(dir, lines), -1);
        assertThat(r.firstViolation()).isEqualTo("index 30 is missing (2 of 0..99 missing)");
        assertThat(r.missing()).isEqualTo(2);
    }

    @Test
    void namesMissingEventsAtTheEnd(@TempDir Path dir) throws IOException {
        OutputCheck.Result r = OutputCheck.check(write(dir, correct(90)), 100);
        assertThat(r.firstViolation()).isEqualTo("expected 100 events (indices 0..99), found 90 distinct indices up to 89");
    }

    @Test
    void namesAWrongCount(@TempDir Path dir) throws IOException {
        List<String> lines = correct(100);
        lines.set(37, "37,2,5,ok"); // key 2's 8th event claims count 5: its state was lost or rolled back
        OutputCheck.Result r = OutputCheck.check(write(dir, lines), 100);
        assertThat(r.firstViolation()).isEqualTo("key 2: index 37 has count 5, expected 8");
        // the next event of key 2 (count 9 after 5) is wrong too, relative to the one seen
        assertThat(r.wrongCounts()).isEqualTo(2);
    }

    @Test
    void namesABadValue(@TempDir Path dir) throws IOException {
        List<String> lines = correct(100);
        lines.set(88, "88,3,18,BAD");
        OutputCheck.Result r = OutputCheck.check(write(dir, lines), 100);
        assertThat(r.firstViolation())
                .isEqualTo("index 88 (key 3, count 18) is BAD: the stored value differed from the one written");
        assertThat(r.bad()).isEqualTo(1);
    }

    @Test
    void theLowestIndexIsNamedFirstAndMalformedLinesBeforeAll(@TempDir Path dir) throws IOException {
        List<String> lines = correct(100);
        lines.set(88, "88,3,18,BAD");
        lines.add(lines.get(20));
        assertThat(OutputCheck.check(write(dir, lines), 100).firstViolation()).isEqualTo("index 20 appears 2 times");

        lines.add("12,x,3,ok");
        OutputCheck.Result r = OutputCheck.check(write(dir, lines), 100);
        assertThat(r.firstViolation()).endsWith("is malformed (expected index,key,count,ok|BAD with index, key and count below 2^31)");
        assertThat(r.malformed()).isEqualTo(1);
    }
}
