package io.fragstate.ysb;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The Yahoo Streaming Benchmark's arithmetic and output format, for the job and the reference
 * computation alike: only {@code view} events count; 10 s tumbling event-time windows aligned to
 * the epoch; one result per campaign and window that saw at least one view.
 */
public final class YsbLogic {
    /** Tumbling window length, as in the original benchmark. */
    public static final long WINDOW_SIZE_MS = 10_000;
    /** Bounded out-of-orderness of the job's watermarks. */
    public static final long MAX_OUT_OF_ORDERNESS_MS = 2_000;
    public static final String VIEW = "view";
    public static final String[] EVENT_TYPES = {"view", "click", "purchase"};
    public static final String[] AD_TYPES = {"banner", "modal", "sponsored-search", "mail", "mobile"};
    /**
     * Event type of the generator's end-of-input records: not a view, so never counted, but its
     * event time moves every partition's watermark past the last window.
     */
    public static final String END_OF_INPUT = "end-of-input";

    private YsbLogic() {}

    public static boolean isView(AdEvent e) {
        return VIEW.equals(e.eventType);
    }

    /** Start of the 10 s window that holds {@code eventTimeMs}. */
    public static long windowStart(long eventTimeMs) {
        return Math.floorDiv(eventTimeMs, WINDOW_SIZE_MS) * WINDOW_SIZE_MS;
    }

    /**
     * One result line: {@code {"campaign_id":"…","window_start":…,"views":…}}, the exact string
     * compared by the exactly-once tests (record key: the campaign id).
     */
    public static String formatCount(String campaignId, long windowStartMs, long views) {
        ObjectNode n = Json.newObject();
        n.put("campaign_id", campaignId);
        n.put("window_start", windowStartMs);
        n.put("views", views);
        return Json.write(n);
    }
}
