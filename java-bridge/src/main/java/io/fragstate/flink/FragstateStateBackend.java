/*
 * Licensed under the Apache License, Version 2.0.
 */
package io.fragstate.flink;

import io.fragstate.flink.config.FragstateSettings;
import io.fragstate.flink.node.FragstateNode;
import io.fragstate.flink.node.FragstateMetrics;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.AbstractStateBackend;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStorage;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.CompletedCheckpointStorageLocation;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.OperatorStateBackend;
import org.apache.flink.runtime.state.StateBackendLoader;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;

import org.apache.flink.util.DynamicCodeLoadingException;

import java.io.IOException;

/**
 * The one-line setup: {@code state.backend.type: io.fragstate.flink.FragstateStateBackendFactory}.
 *
 * <p>Working state lives where Flink's own backends keep it ({@link HashMapStateBackend} or
 * {@code EmbeddedRocksDBStateBackend}, full or incremental, chosen by {@link
 * FragstateOptions#LOCAL_BACKEND}); this class only delegates. It also implements {@link
 * CheckpointStorage}: Flink's {@code CheckpointStorageLoader} takes a state backend that is a
 * checkpoint storage as the job's storage, so every snapshot goes to {@code fragstate://}
 * without a second setting.
 */
public class FragstateStateBackend extends AbstractStateBackend
        implements CheckpointStorage, ConfigurableStateBackend {

    private static final long serialVersionUID = 1L;

    private final FragstateSettings settings;
    private final AbstractStateBackend local;
    private final FragstateCheckpointStorage storage;

    /** Defaults for everything; {@link #configure} applies a configuration. */
    public FragstateStateBackend() {
        this(new Configuration(), FragstateStateBackend.class.getClassLoader());
    }

    public FragstateStateBackend(ReadableConfig config, ClassLoader classLoader) {
        this.settings = FragstateSettings.fromConfig(config);
        this.storage = new FragstateCheckpointStorage(settings, config);
        switch (settings.localBackend()) {
            case ROCKSDB:
                this.local = rocksDb(config, classLoader);
                break;
            case HASHMAP:
            default:
                this.local = new HashMapStateBackend().configure(config, classLoader);
        }
    }

    /**
     * Flink's RocksDB backend, made by Flink's own loader from {@code state.backend.type: rocksdb}:
     * its class lives in {@code org.apache.flink.contrib.streaming.state} up to Flink 1.20 and in
     * {@code org.apache.flink.state.rocksdb} since 2.0, so naming it would tie this jar to one line.
     */
    private static AbstractStateBackend rocksDb(ReadableConfig config, ClassLoader classLoader) {
        Configuration c = Configuration.fromMap(config.toMap());
        c.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
        try {
            return (AbstractStateBackend) StateBackendLoader.loadStateBackendFromConfig(c, classLoader, null);
        } catch (DynamicCodeLoadingException | IOException e) {
            throw new IllegalConfigurationException("cannot create Flink's RocksDB state backend for "
                    + FragstateOptions.LOCAL_BACKEND.key() + ": rocksdb: " + e.getMessage(), e);
        }
    }

    @Override
    public FragstateStateBackend configure(ReadableConfig config, ClassLoader classLoader)
            throws IllegalConfigurationException {
        return new FragstateStateBackend(config, classLoader);
    }

    /** The backend that holds working state (HashMap or EmbeddedRocksDB). */
    public AbstractStateBackend getLocalBackend() {
        return local;
    }

    public FragstateCheckpointStorage getCheckpointStorage() {
        return storage;
    }

    // --- StateBackend: delegated ---------------------------------------------------------------

    @Override
    public <K> AbstractKeyedStateBackend<K> createKeyedStateBackend(
            KeyedStateBackendParameters<K> parameters) throws IOException {
        FragstateNode.configure(settings);
        FragstateMetrics.registerFor(parameters.getEnv().getMetricGroup());
        return local.createKeyedStateBackend(parameters);
    }

    @Override
    public OperatorStateBackend createOperatorStateBackend(
            OperatorStateBackendParameters parameters) throws Exception {
        FragstateNode.configure(settings);
        FragstateMetrics.registerFor(parameters.getEnv().getMetricGroup());
        return local.createOperatorStateBackend(parameters);
    }

    // raw return type: AsyncKeyedStateBackend is generic since Flink 2.0, not in 1.20 (one jar for both)
    @Override
    @SuppressWarnings({"rawtypes", "unchecked"})
    public <K> AsyncKeyedStateBackend createAsyncKeyedStateBackend(
            KeyedStateBackendParameters<K> parameters) throws Exception {
        FragstateNode.configure(settings);
        return local.createAsyncKeyedStateBackend(parameters);
    }

    @Override
    public boolean supportsAsyncKeyedStateBackend() {
        return local.supportsAsyncKeyedStateBackend();
    }

    @Override
    public boolean useManagedMemory() {
        return local.useManagedMemory();
    }

    @Override
    public boolean supportsNoClaimRestoreMode() {
        return local.supportsNoClaimRestoreMode();
    }

    @Override
    public boolean supportsSavepointFormat(SavepointFormatType formatType) {
        return local.supportsSavepointFormat(formatType);
    }

    @Override
    public String getName() {
        return "fragstate+" + local.getName();
    }

    // --- CheckpointStorage: fragstate:// -------------------------------------------------------

    @Override
    public CompletedCheckpointStorageLocation resolveCheckpoint(String externalPointer) throws IOException {
        return storage.resolveCheckpoint(externalPointer);
    }

    @Override
    public CheckpointStorageAccess createCheckpointStorage(JobID jobId) throws IOException {
        return storage.createCheckpointStorage(jobId);
    }

    @Override
    public String toString() {
        return "FragstateStateBackend{local=" + local + ", storage=" + storage + "}";
    }
}
