package io.fragstate.examples.traffic;

/** A formatted notification and its record key (the licence plate). */
public final class KeyedNotification {
    public String lp;
    public String json;

    public KeyedNotification() {}

    public KeyedNotification(String lp, String json) {
        this.lp = lp;
        this.json = json;
    }

    @Override
    public String toString() {
        return json;
    }
}
