package io.fragstate.examples.ysb;

/** A formatted count line and its record key (the campaign id). */
public final class KeyedCount {
    public String campaignId;
    public String json;

    public KeyedCount() {}

    public KeyedCount(String campaignId, String json) {
        this.campaignId = campaignId;
        this.json = json;
    }

    @Override
    public String toString() {
        return json;
    }
}
