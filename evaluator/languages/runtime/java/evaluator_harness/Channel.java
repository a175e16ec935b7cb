package evaluator_harness;

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;

/**
 * The report pipe. The launcher script hands the nonce over on fd 4 (it is not in the
 * environment, where System.getenv would show it to the program); records are
 * "<nonce> <json>" lines on the fd named by EVALUATOR_REPORT_FD.
 */
final class Channel {
    private static String nonce = "";
    private static OutputStream out;

    private Channel() {}

    /**
     * An inherited file descriptor. Java has no public way to name one, so the private
     * field of FileDescriptor is set (the launcher opens java.io for this); /proc/self/fd
     * is the fallback, which gVisor does not offer for pipes.
     */
    private static FileDescriptor inherited(int number) {
        try {
            FileDescriptor descriptor = new FileDescriptor();
            Field field = FileDescriptor.class.getDeclaredField("fd");
            field.setAccessible(true);
            field.setInt(descriptor, number);
            return descriptor;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static InputStream input(int number) throws IOException {
        FileDescriptor descriptor = inherited(number);
        return descriptor != null ? new FileInputStream(descriptor)
                : new FileInputStream("/proc/self/fd/" + number);
    }

    private static OutputStream output(int number) throws IOException {
        FileDescriptor descriptor = inherited(number);
        return descriptor != null ? new FileOutputStream(descriptor)
                : new FileOutputStream("/proc/self/fd/" + number);
    }

    static synchronized void open() {
        // Read in a loop: readAllBytes() seeks, which a pipe refuses.
        try (InputStream in = input(4)) {
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            byte[] buffer = new byte[256];
            for (int n; (n = in.read(buffer)) > 0 && bytes.size() < 4096; ) {
                bytes.write(buffer, 0, n);
            }
            nonce = new String(bytes.toByteArray(), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            nonce = "";
        }
        String fd = System.getenv("EVALUATOR_REPORT_FD");
        if (fd != null && !nonce.isEmpty()) {
            try {
                out = output(Integer.parseInt(fd.trim()));
            } catch (IOException | NumberFormatException e) {
                out = null;
            }
        }
    }

    static synchronized void emit(String json) {
        if (out == null) {
            System.err.println("[evaluator] " + json);
            return;
        }
        try {
            out.write((nonce + " " + json + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (IOException e) {
            // The pipe is gone: the run will be judged incomplete, which is right.
        }
    }

    static String quote(String text) {
        StringBuilder sb = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    // Lone surrogates are escaped too, so the line is always valid UTF-8.
                    if (c < 0x20 || Character.isSurrogate(c) && !validPair(text, i)) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        return sb.append('"').toString();
    }

    private static boolean validPair(String text, int i) {
        char c = text.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(text.charAt(i - 1));
    }
}
