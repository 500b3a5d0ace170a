package io.fragstate.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs the ci/lib scripts (and Flink's CLI) as child processes with a timeout. */
final class Shell {
    private Shell() {}

    /**
     * Runs {@code command}; its stderr goes to this process' stderr (progress of downloads and
     * starts), its stdout is returned.
     *
     * @throws IllegalStateException on a non-zero exit or a timeout, naming the command
     */
    static String run(Path workDir, Map<String, String> env, Duration timeout, List<String> command) {
        ProcessBuilder pb = new ProcessBuilder(command).directory(workDir.toFile());
        pb.environment().putAll(env);
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        Path out;
        try {
            out = Files.createTempFile("fragstate-it-", ".out");
            pb.redirectOutput(out.toFile());
            Process p = pb.start();
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                throw new IllegalStateException("timed out after " + timeout.toSeconds() + " s: " + String.join(" ", command));
            }
            String stdout = Files.readString(out, StandardCharsets.UTF_8);
            Files.deleteIfExists(out);
            if (p.exitValue() != 0) {
                throw new IllegalStateException("exit code " + p.exitValue() + " from: " + String.join(" ", command)
                        + (stdout.isBlank() ? "" : "\n" + tail(stdout, 4000)));
            }
            return stdout;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + String.join(" ", command) + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted: " + String.join(" ", command), e);
        }
    }

    static String bash(Path repo, Duration timeout, String script, String... args) {
        return bash(repo, Map.of(), timeout, script, args);
    }

    /** {@code bash repo/script args...} with {@code env} added to the environment. */
    static String bash(Path repo, Map<String, String> env, Duration timeout, String script, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add("bash");
        cmd.add(repo.resolve(script).toString());
        cmd.addAll(List.of(args));
        return run(repo, env, timeout, cmd);
    }

    static String tail(String s, int max) {
        return s.length() <= max ? s : "..." + s.substring(s.length() - max);
    }
}
