package io.fragstate.examples.ysb;

import io.fragstate.ysb.CampaignAd;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReadOnlyBroadcastState;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Joins each view (keyed by ad id) with its campaign from the broadcast campaign table.
 *
 * <p>A view whose ad is not in the table yet is kept in keyed state with an event-time timer at its
 * own event time. The timer fires only once the watermark has passed that time, and the watermark
 * of this operator is held back until the bounded campaigns source has finished (that input
 * carries no watermark before it ends), so by then the whole table is here: the view is emitted,
 * with its own event time as timestamp, before the watermark that closes its window moves on. An
 * ad still unknown then is not in the table: its views are dropped and counted ({@code
 * unknownAdViews}), as the original benchmark drops them.
 */
final class CampaignJoin extends KeyedBroadcastProcessFunction<String, AdView, CampaignAd, CampaignView> {
    private static final long serialVersionUID = 1L;

    /** The campaign table in broadcast state: ad id → campaign id. */
    static final MapStateDescriptor<String, String> CAMPAIGNS =
            new MapStateDescriptor<>("campaigns", Types.STRING, Types.STRING);

    private transient ListState<Long> waiting;
    private transient Counter unknownAdViews;

    @Override
    public void open(org.apache.flink.api.common.functions.OpenContext openContext) {
        waiting = getRuntimeContext().getListState(new ListStateDescriptor<>("views-waiting-for-their-campaign", Types.LONG));
        unknownAdViews = getRuntimeContext().getMetricGroup().counter("unknownAdViews");
    }

    @Override
    public void processElement(AdView view, ReadOnlyContext ctx, Collector<CampaignView> out) throws Exception {
        String campaign = ctx.getBroadcastState(CAMPAIGNS).get(view.adId);
        if (campaign != null) {
            out.collect(new CampaignView(campaign, view.eventTime));
            return;
        }
        waiting.add(view.eventTime);
        ctx.timerService().registerEventTimeTimer(view.eventTime);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<CampaignView> out) throws Exception {
        ReadOnlyBroadcastState<String, String> table = ctx.getBroadcastState(CAMPAIGNS);
        String campaign = table.get(ctx.getCurrentKey());
        List<Long> later = new ArrayList<>();
        for (Long t : waiting.get()) {
            if (t > timestamp) {
                later.add(t);
            } else if (campaign != null) {
                out.collect(new CampaignView(campaign, t)); // t == timestamp: the output keeps the view's time
            } else {
                unknownAdViews.inc();
            }
        }
        waiting.update(later);
    }

    @Override
    public void processBroadcastElement(CampaignAd row, Context ctx, Collector<CampaignView> out) throws Exception {
        ctx.getBroadcastState(CAMPAIGNS).put(row.adId, row.campaignId);
    }
}
