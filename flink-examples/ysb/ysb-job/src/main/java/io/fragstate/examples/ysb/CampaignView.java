package io.fragstate.examples.ysb;

/** A view joined with its campaign (its element timestamp is the view's event time). */
public final class CampaignView {
    public String campaignId;
    public long eventTime;

    public CampaignView() {}

    public CampaignView(String campaignId, long eventTime) {
        this.campaignId = campaignId;
        this.eventTime = eventTime;
    }
}
