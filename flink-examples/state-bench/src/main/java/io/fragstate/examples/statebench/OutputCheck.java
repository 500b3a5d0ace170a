package io.fragstate.examples.statebench;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Checks the committed output of {@link StateBenchJob}: the files under a directory whose names do
 * not start with {@code .} (the FileSink's in-progress and pending files do), lines
 * {@code index,key,count,ok|BAD}. Correct output has no BAD line, every index 0..max exactly once,
 * and for every key the counts in index order 1, 2, 3, … . Memory: a bit and two ints per index
 * (a BitSet and two arrays), an int per key; duplicates alone go to a map.
 */
final class OutputCheck {
    /** The outcome; {@code firstViolation} is null when the output is correct. */
    record Result(long events, int keys, long maxIndex, int files, String firstViolation, long duplicates, long missing,
                  long wrongCounts, long bad, long malformed) {
        boolean ok() {
            return firstViolation == null;
        }

        String summary() {
            String figures = "events " + events + ", keys " + keys + ", max index " + maxIndex + ", files " + files;
            if (ok()) {
                return "OK: " + figures;
            }
            return "FAILED: " + firstViolation + " (" + duplicates + " duplicate, " + missing + " missing, " + wrongCounts
                    + " wrong-count, " + bad + " BAD, " + malformed + " malformed lines; " + figures + ")";
        }
    }

    private final BitSet seen = new BitSet();
    private int[] keyOf = new int[1 << 16];
    private int[] countOf = new int[1 << 16];
    private final Map<Integer, Integer> duplicateTimes = new HashMap<>();
    private long maxIndex = -1;
    private long events;
    private long bad;
    private long malformed;
    private long duplicates;
    private int files;
    private long firstIndex = Long.MAX_VALUE; // index of the first violation found so far (-1: one without an index)
    private String firstViolation;

    private OutputCheck() {}

    /**
     * @param expectEvents the number of events the output must have, or a negative number for any
     */
    static Result check(Path dir, long expectEvents) throws IOException {
        OutputCheck c = new OutputCheck();
        for (Path f : committedFiles(dir)) {
            c.read(f);
        }
        return c.finish(expectEvents);
    }

    static List<Path> committedFiles(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException("not a directory: " + dir);
        }
        List<Path> out = new ArrayList<>();
        try (Stream<Path> all = Files.walk(dir)) {
            all.filter(Files::isRegularFile)
                    .filter(p -> !hidden(dir, p))
                    .sorted()
                    .forEach(out::add);
        }
        return out;
    }

    /** True when the file or a folder between {@code dir} and it starts with a dot. */
    private static boolean hidden(Path dir, Path p) {
        for (Path part : dir.relativize(p)) {
            if (part.toString().startsWith(".")) {
                return true;
            }
        }
        return false;
    }

    private void violation(long index, String message) {
        violation(index, message, false);
    }

    /** Keeps the violation with the lowest index; {@code replaceSame}: also one at the same index (a recount). */
    private void violation(long index, String message, boolean replaceSame) {
        if (index < firstIndex || (replaceSame && index == firstIndex)) {
            firstIndex = index;
            firstViolation = message;
        }
    }

    /** Parses one file byte by byte: {@code digits,digits,digits,(ok|BAD)\n}. */
    private void read(Path file) throws IOException {
        files++;
        byte[] buf = new byte[1 << 20];
        long[] field = new long[3];
        int fieldNo = 0;
        int digits = 0;
        int tag = 0; // the tag's bytes so far, packed
        int tagLen = 0;
        boolean broken = false;
        long line = 1;
        boolean lineHasBytes = false;
        try (InputStream in = Files.newInputStream(file)) {
            int n;
            while ((n = in.read(buf)) > 0) {
                for (int p = 0; p < n; p++) {
                    byte b = buf[p];
                    if (b == '\n') {
                        line(file, line, field, fieldNo, tag, tagLen, broken);
                        line++;
                        field[0] = field[1] = field[2] = 0;
                        fieldNo = digits = tag = tagLen = 0;
                        broken = lineHasBytes = false;
                        continue;
                    }
                    lineHasBytes = true;
                    if (broken) {
                        continue;
                    }
                    if (fieldNo < 3) {
                        if (b >= '0' && b <= '9' && digits < 18) {
                            field[fieldNo] = field[fieldNo] * 10 + (b - '0');
                            digits++;
                        } else if (b == ',' && digits > 0) {
                            fieldNo++;
                            digits = 0;
                        } else {
                            broken = true;
                        }
                    } else if (tagLen < 3) {
                        tag = (tag << 8) | (b & 0xff);
                        tagLen++;
                    } else {
                        broken = true;
                    }
                }
            }
        }
        if (lineHasBytes) {
            line(file, line, field, fieldNo, tag, tagLen, broken);
        }
    }

    private static final int OK = ('o' << 8) | 'k';
    private static final int BAD = ('B' << 16) | ('A' << 8) | 'D';

    private void line(Path file, long lineNo, long[] f, int fieldNo, int tag, int tagLen, boolean broken) {
        boolean isOk = tagLen == 2 && tag == OK;
        boolean isBad = tagLen == 3 && tag == BAD;
        if (broken || fieldNo != 3 || !(isOk || isBad)
                || f[0] >= Integer.MAX_VALUE - 1 || f[1] >= Integer.MAX_VALUE || f[2] >= Integer.MAX_VALUE) {
            malformed++;
            violation(-1, file.getFileName() + " line " + lineNo + " is malformed (expected index,key,count,ok|BAD "
                    + "with index, key and count below 2^31)");
            return;
        }
        int index = (int) f[0];
        events++;
        if (isBad) {
            bad++;
            violation(index, "index " + index + " (key " + f[1] + ", count " + f[2] + ") is BAD: the stored value "
                    + "differed from the one written");
        }
        if (seen.get(index)) {
            duplicates++;
            int times = duplicateTimes.merge(index, 2, (a, b) -> a + 1);
            violation(index, "index " + index + " appears " + times + " times", true);
            return;
        }
        seen.set(index);
        maxIndex = Math.max(maxIndex, index);
        if (index >= keyOf.length) {
            int size = Math.max(index + 1, (int) Math.min(Integer.MAX_VALUE - 8, 2L * keyOf.length));
            keyOf = Arrays.copyOf(keyOf, size);
            countOf = Arrays.copyOf(countOf, size);
        }
        keyOf[index] = (int) f[1];
        countOf[index] = (int) f[2];
    }

    private Result finish(long expectEvents) {
        long distinct = seen.cardinality();
        long missing = (maxIndex + 1) - distinct;
        if (missing > 0) {
            int gap = seen.nextClearBit(0);
            violation(gap, "index " + gap + " is missing (" + missing + " of 0.." + maxIndex + " missing)");
        }
        if (expectEvents >= 0 && (distinct != expectEvents || maxIndex != expectEvents - 1)) {
            violation(Math.min(maxIndex + 1, expectEvents), "expected " + expectEvents + " events (indices 0.."
                    + (expectEvents - 1) + "), found " + distinct + " distinct indices up to " + maxIndex);
        }
        // per key, in index order: counts 1, 2, 3, ... (after a wrong one, continue from it)
        int[] last = new int[1 << 10];
        long wrongCounts = 0;
        int keys = 0;
        for (int i = seen.nextSetBit(0); i >= 0; i = seen.nextSetBit(i + 1)) {
            int key = keyOf[i];
            if (key >= last.length) {
                last = Arrays.copyOf(last, Math.max(key + 1, (int) Math.min(Integer.MAX_VALUE - 8, 2L * last.length)));
            }
            if (last[key] == 0) {
                keys++;
            }
            int expected = last[key] + 1;
            if (countOf[i] != expected) {
                wrongCounts++;
                violation(i, "key " + key + ": index " + i + " has count " + countOf[i] + ", expected " + expected);
            }
            last[key] = countOf[i];
        }
        return new Result(events, keys, maxIndex, files, firstViolation, duplicates, missing, wrongCounts, bad, malformed);
    }
}
