package io.fragstate.it;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a run tells: the {@code [it <time>] ...} progress lines on stdout, and the results file
 * {@code integration-tests/results/<scenario>-<time>.json} with the verdict, the timeline and the
 * fragstate figures of one run.
 */
final class Report {
    /** UTC time stamp of the progress lines, run directories and results files. */
    static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").withZone(ZoneOffset.UTC);
    private static final PrintStream LOG = System.out;

    private Report() {}

    /** One progress line: {@code [it 20261129-101500] msg}. */
    static void step(String msg) {
        LOG.printf("[it %s] %s%n", STAMP.format(Instant.now()), msg);
    }

    /** Writes {@code <repo>/integration-tests/results/<scenario>-<start time>.json}. */
    static void writeResults(Path repo, ScenarioRunner.Result result) throws IOException {
        Path dir = repo.resolve("integration-tests/results");
        Files.createDirectories(dir);
        ObjectMapper m = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("scenario", result.scenario);
        doc.put("description", result.description);
        doc.put("startedAt", result.startedAt);
        doc.put("exactlyOnce", result.exactlyOnce());
        doc.put("expectedNotifications", result.expectedNotifications);
        doc.put("committedNotifications", result.committedNotifications);
        doc.put("missing", result.missing.size());
        doc.put("duplicatesOrUnexpected", result.duplicatesOrUnexpected.size());
        doc.put("recordKeyNotPlate", result.keyMismatches);
        doc.put("inputEvents", result.inputEvents);
        doc.put("completedCheckpoints", result.completedCheckpoints);
        doc.put("wallSeconds", result.wallSeconds);
        doc.put("timeline", timeline(result.timeline));
        if (!result.fragstate.isEmpty()) {
            doc.put("fragstate", result.fragstate);
        }
        doc.put("flinkConfig", result.flinkConfig);
        doc.put("simulation", result.simulation);
        doc.put("runDir", result.runDir);
        Path file = dir.resolve(result.scenario + "-" + STAMP.format(Instant.parse(result.startedAt)) + ".json");
        m.writeValue(file.toFile(), doc);
        step("results written to " + file);
    }

    /** The timeline of one recovery as the results file shows it. */
    static Map<String, Object> timeline(RecoveryTimeline tl) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("disruption", tl.kind);
        t.put("killedTaskManagers", tl.killedTaskManagers);
        t.put("statefulSubtasksOnKilled", tl.statefulSubtasksOnKilled);
        t.put("killToFailureDetectedMs", tl.detectionMs());
        t.put("firstFailure", tl.firstFailure);
        t.put("restores", tl.restores);
        t.put("restoredCheckpointId", tl.restoredCheckpointId);
        t.put("killToRestoreTriggeredMs", tl.restoreTimestampMs < 0 ? -1 : tl.restoreTimestampMs - tl.killAtMs);
        t.put("killToAllRunningMs", tl.killToRunningMs());
        t.put("killToFirstCheckpointAfterRecoveryMs", tl.killToFirstCheckpointMs());
        t.put("phasesMsAfterDisruption", tl.phases);
        t.put("restoredFrom", tl.restoredFrom);
        t.put("windowSubtasksInitializingToRunningMs", Map.of("min", tl.minInitializingMs("window"), "max", tl.maxInitializingMs("window")));
        t.put("killAtMs", tl.killAtMs);
        t.put("subtasks", tl.subtasks);
        return t;
    }
}
