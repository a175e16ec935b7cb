package evaluator_harness;

import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One execution of one rewritten assertion. The rewritten test opens a Site, evaluates
 * the condition (tapping the first call of the function under test), and reports; an
 * exception is reported as an error of this assertion only.
 */
public final class Site {
    private static final int VALUE_CAP = 300;
    private static int count = 0;

    private final int site;
    private final int index;
    private boolean tapped;
    private String actual;

    private Site(int site) {
        this.site = site;
        this.index = count++;
    }

    public static Site open(int site) {
        return new Site(site);
    }

    static int count() {
        return count;
    }

    private void see(Object value) {
        if (!tapped) {
            tapped = true;
            actual = show(value);
        }
    }

    // One overload per primitive type, so a tapped call keeps its exact static type.
    public boolean tap(boolean v) { see(v); return v; }
    public char tap(char v) { see(v); return v; }
    public byte tap(byte v) { see(v); return v; }
    public short tap(short v) { see(v); return v; }
    public int tap(int v) { see(v); return v; }
    public long tap(long v) { see(v); return v; }
    public float tap(float v) { see(v); return v; }
    public double tap(double v) { see(v); return v; }
    public <T> T tap(T v) { see(v); return v; }

    public void truth(boolean ok) {
        finish(ok ? "passed" : "failed", tapped ? actual : null, null);
    }

    public void compare(boolean ok, Object actualValue, Object expectedValue) {
        finish(ok ? "passed" : "failed", show(actualValue), show(expectedValue));
    }

    public void raised(Throwable error) {
        String message = String.valueOf(error.getMessage());
        StringBuilder json = header("error", tapped ? actual : null, null);
        json.append(",\"error_type\":").append(Channel.quote(typeName(error)));
        json.append(",\"message\":").append(Channel.quote(cap(message, 1000)));
        if (error instanceof OutOfMemoryError) {
            json.append(",\"memory\":true");
        }
        Channel.emit(json.append('}').toString());
    }

    private StringBuilder header(String status, String actualText, String expectedText) {
        StringBuilder json = new StringBuilder(128);
        json.append("{\"kind\":\"test\",\"index\":").append(index)
            .append(",\"site\":").append(site)
            .append(",\"status\":\"").append(status).append('"');
        if (actualText != null) json.append(",\"actual\":").append(Channel.quote(actualText));
        if (expectedText != null) json.append(",\"expected\":").append(Channel.quote(expectedText));
        return json;
    }

    private void finish(String status, String actualText, String expectedText) {
        Channel.emit(header(status, actualText, expectedText).append('}').toString());
    }

    static String typeName(Throwable error) {
        String simple = error.getClass().getSimpleName();
        return simple.isEmpty() ? error.getClass().getName() : simple;
    }

    static String cap(String text, int limit) {
        return text.length() <= limit ? text : text.substring(0, limit) + "...";
    }

    /** A Java-literal-like rendering: strings quoted, collections and arrays listed. */
    public static String show(Object value) {
        StringBuilder sb = new StringBuilder();
        try {
            put(sb, value);
        } catch (RuntimeException | StackOverflowError e) {
            sb.append("<unprintable ").append(value.getClass().getName()).append('>');
        }
        return cap(sb.toString(), VALUE_CAP);
    }

    private static void put(StringBuilder sb, Object value) {
        if (sb.length() > VALUE_CAP) {
            return;
        }
        if (value == null) {
            sb.append("null");
        } else if (value instanceof String) {
            sb.append(Channel.quote((String) value));
        } else if (value instanceof Character) {
            sb.append('\'').append(value).append('\'');
        } else if (value instanceof Optional) {
            Optional<?> optional = (Optional<?>) value;
            if (optional.isPresent()) {
                sb.append("Optional.of(");
                put(sb, optional.get());
                sb.append(')');
            } else {
                sb.append("Optional.empty");
            }
        } else if (value instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                if (!first) sb.append(", ");
                first = false;
                put(sb, entry.getKey());
                sb.append('=');
                put(sb, entry.getValue());
                if (sb.length() > VALUE_CAP) break;
            }
            sb.append('}');
        } else if (value instanceof Collection) {
            sb.append('[');
            Iterator<?> it = ((Collection<?>) value).iterator();
            boolean first = true;
            while (it.hasNext() && sb.length() <= VALUE_CAP) {
                if (!first) sb.append(", ");
                first = false;
                put(sb, it.next());
            }
            sb.append(']');
        } else if (value.getClass().isArray()) {
            sb.append('[');
            int n = Array.getLength(value);
            for (int i = 0; i < n && sb.length() <= VALUE_CAP; i++) {
                if (i > 0) sb.append(", ");
                put(sb, Array.get(value, i));
            }
            sb.append(']');
        } else {
            sb.append(value);
        }
    }

    /** The elements of a boolean list as one list again, for tests that keep using it. */
    public static List<Boolean> list(boolean[] values) {
        List<Boolean> list = new ArrayList<>(values.length);
        for (boolean v : values) list.add(v);
        return Arrays.asList(list.toArray(new Boolean[0]));
    }
}
