package io.fragstate.examples.statebench;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The keyed state: per key (count, value), the value being {@link BenchValues#value}(key, count).
 * On each event the stored value is checked against a fresh computation (unless the key is new),
 * the count goes up by one, the value for the new count is stored and the line
 * {@code index,key,count,ok|BAD} is emitted ({@code BAD}: the state backend returned a value that
 * is not the one last written).
 */
final class CountAndVerify extends KeyedProcessFunction<Long, Long, String> {
    private static final long serialVersionUID = 1L;

    static final TypeInformation<Tuple2<Long, byte[]>> ENTRY = Types.TUPLE(Types.LONG, Types.PRIMITIVE_ARRAY(Types.BYTE));

    private final int valueBytes;
    private transient ValueState<Tuple2<Long, byte[]>> entry;

    CountAndVerify(int valueBytes) {
        this.valueBytes = valueBytes;
    }

    @Override
    public void open(OpenContext openContext) {
        entry = getRuntimeContext().getState(new ValueStateDescriptor<>("count-and-value", ENTRY));
    }

    @Override
    public void processElement(Long index, Context ctx, Collector<String> out) throws Exception {
        long key = ctx.getCurrentKey();
        Tuple2<Long, byte[]> stored = entry.value();
        long count = stored == null ? 0 : stored.f0;
        boolean ok = count == 0 || BenchValues.matches(key, count, stored.f1, valueBytes);
        long next = count + 1;
        entry.update(Tuple2.of(next, BenchValues.value(key, next, valueBytes)));
        out.collect(index + "," + key + "," + next + (ok ? ",ok" : ",BAD"));
    }
}
