package io.fragstate.examples.traffic;

import io.fragstate.traffic.Notification;
import io.fragstate.traffic.VehicleRegistry;
import io.fragstate.traffic.WindowSummary;
import java.io.IOException;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Enrichment: looks the plate up in the vehicle registry (a CSV reference table read through
 * Flink's file systems, so {@code file://}, {@code s3://}, ... work) and formats the notification.
 * Without a registry every vehicle is {@code unregistered}.
 */
final class VehicleTypeEnricher extends RichMapFunction<WindowSummary, KeyedNotification> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(VehicleTypeEnricher.class);

    private final String registryUri;
    private transient VehicleRegistry registry;

    VehicleTypeEnricher(String registryUri) {
        this.registryUri = registryUri == null ? "" : registryUri;
    }

    @Override
    public void open(OpenContext openContext) throws IOException {
        if (registryUri.isEmpty()) {
            registry = VehicleRegistry.empty();
            LOG.info("no --vehicle-registry given: every vehicle is '{}'", VehicleRegistry.UNREGISTERED);
            return;
        }
        Path path = new Path(registryUri);
        try (FSDataInputStream in = path.getFileSystem().open(path)) {
            registry = VehicleRegistry.read(in, registryUri);
        } catch (IOException e) {
            throw new IOException("cannot read the vehicle registry --vehicle-registry " + registryUri + ": " + e.getMessage(), e);
        }
        LOG.info("vehicle registry {}: {} plates", registryUri, registry.size());
    }

    @Override
    public KeyedNotification map(WindowSummary s) {
        return new KeyedNotification(s.lp, Notification.format(s, registry.typeOf(s.lp)));
    }
}
