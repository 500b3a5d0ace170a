package io.fragstate.it;

import io.fragstate.generator.EventSource;
import io.fragstate.generator.ReferenceModel;
import io.fragstate.generator.TrafficSimulator;
import io.fragstate.generator.VehicleGeneratorMain;
import java.nio.file.Path;
import java.util.List;

/** The Daedalus Traffic Monitoring job; its reference table is a vehicle registry file. */
final class TrafficWorkload implements Workload {
    @Override
    public String name() {
        return "traffic";
    }

    @Override
    public Path jobJar(Path repo) {
        return Artifacts.jobJar(repo);
    }

    @Override
    public String inputTopic() {
        return "traffic-monitoring-events";
    }

    @Override
    public String outputTopic() {
        return "traffic-monitoring-notifications";
    }

    @Override
    public String keyField() {
        return "lp";
    }

    @Override
    public Scenario.Simulation defaultSimulation() {
        return Scenario.defaultSimulation();
    }

    @Override
    public List<String> expected(Scenario.Simulation sim) {
        return ReferenceModel.expectedNotifications(sim.generatorConfig());
    }

    @Override
    public EventSource events(Scenario.Simulation sim) {
        return TrafficSimulator.events(sim.generatorConfig());
    }

    @Override
    public void prepare(Scenario.Simulation sim, Path runDir, String brokers) throws Exception {
        VehicleGeneratorMain.writeRegistry(TrafficSimulator.registryFor(sim.generatorConfig()), registry(runDir));
    }

    @Override
    public List<String> jobArguments(Path runDir) {
        return List.of("--vehicle-registry", registry(runDir).toUri().toString());
    }

    private static Path registry(Path runDir) {
        return runDir.resolve("vehicle-registry.csv");
    }
}
