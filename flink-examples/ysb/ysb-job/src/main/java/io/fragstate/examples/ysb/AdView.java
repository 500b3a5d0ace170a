package io.fragstate.examples.ysb;

/** A view event projected to what the benchmark keeps: ad id and event time. */
public final class AdView {
    public String adId;
    public long eventTime;

    public AdView() {}

    public AdView(String adId, long eventTime) {
        this.adId = adId;
        this.eventTime = eventTime;
    }
}
