package io.fragstate.examples.ysb;

import io.fragstate.ysb.YsbLogic;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/** Counts the views of one campaign in one window (the window state is one long). */
final class CountViews implements AggregateFunction<CampaignView, Long, Long> {
    private static final long serialVersionUID = 1L;

    @Override
    public Long createAccumulator() {
        return 0L;
    }

    @Override
    public Long add(CampaignView view, Long count) {
        return count + 1;
    }

    @Override
    public Long getResult(Long count) {
        return count;
    }

    @Override
    public Long merge(Long a, Long b) {
        return a + b;
    }

    /** Formats the window's count with its campaign and start. */
    static final class Emit extends ProcessWindowFunction<Long, KeyedCount, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(String campaignId, Context ctx, Iterable<Long> counts, Collector<KeyedCount> out) {
            long views = counts.iterator().next();
            out.collect(new KeyedCount(campaignId, YsbLogic.formatCount(campaignId, ctx.window().getStart(), views)));
        }
    }
}
