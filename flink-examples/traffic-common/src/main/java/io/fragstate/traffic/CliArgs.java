package io.fragstate.traffic;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Minimal {@code --name value} / {@code --flag} command-line parser shared by the job and the
 * generator. Unknown options are an error naming the option and the known ones.
 */
public final class CliArgs {
    private final Map<String, String> values = new LinkedHashMap<>();

    private CliArgs() {}

    /** A command-line tool's body: its exit code. */
    @FunctionalInterface
    public interface Command {
        int run() throws Exception;
    }

    /**
     * Runs a tool's {@code main} and exits with its code: a bad argument or state (the user's
     * error, already explained by the message) prints {@code tool: message} and exits 2; anything
     * else prints the exception and exits 1.
     */
    public static void runMain(String tool, Command command) {
        int code;
        try {
            code = command.run();
        } catch (IllegalArgumentException | IllegalStateException | java.io.UncheckedIOException e) {
            System.err.println(tool + ": " + e.getMessage());
            code = 2;
        } catch (Exception e) {
            System.err.println(tool + ": " + e);
            code = 1;
        }
        System.exit(code);
    }

    /**
     * @param known option names without dashes; an option listed in {@code flags} takes no value
     */
    public static CliArgs parse(String[] args, Set<String> known, Set<String> flags) {
        CliArgs a = new CliArgs();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + arg + "' (options look like --name value)");
            }
            String name = arg.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (!known.contains(name) && !flags.contains(name)) {
                throw new IllegalArgumentException("unknown option --" + name + "; known: " + known + " flags: " + flags);
            }
            if (flags.contains(name)) {
                a.values.put(name, value == null ? "true" : value);
                continue;
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("option --" + name + " needs a value");
                }
                value = args[++i];
            }
            a.values.put(name, value);
        }
        return a;
    }

    public boolean has(String name) {
        return values.containsKey(name);
    }

    public String get(String name, String def) {
        return values.getOrDefault(name, def);
    }

    public boolean flag(String name) {
        return Boolean.parseBoolean(values.getOrDefault(name, "false"));
    }

    public long getLong(String name, long def) {
        String v = values.get(name);
        if (v == null) {
            return def;
        }
        try {
            return Long.parseLong(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option --" + name + " needs an integer, got '" + v + "'");
        }
    }

    public int getInt(String name, int def) {
        long v = getLong(name, def);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("option --" + name + " is out of range: " + v);
        }
        return (int) v;
    }

    public double getDouble(String name, double def) {
        String v = values.get(name);
        if (v == null) {
            return def;
        }
        try {
            return Double.parseDouble(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option --" + name + " needs a number, got '" + v + "'");
        }
    }
}
