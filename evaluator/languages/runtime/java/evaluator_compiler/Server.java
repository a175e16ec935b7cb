package evaluator_compiler;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.tools.FileObject;
import javax.tools.ForwardingJavaFileManager;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileManager;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * javac, kept warm: compiles one program per request, in memory, for as long as its
 * sandbox lives.
 *
 * Starting javac costs a JVM start-up and a cold compiler, about 20 times the cost of
 * compiling one HumanEval program with a warm one. This server runs in a sandbox of
 * its own that never runs a program (javac with -proc:none executes nothing it
 * compiles), so nothing a program does can reach it.
 *
 * Protocol, on stdin and stdout: a message is an int32 count, then that many items,
 * each an int32 length and that many bytes.
 * Request: "compile", the number of options, the options (javac's command-line options,
 * without -d), the number of sources, then each source's file name and UTF-8 text.
 * Answer: javac's exit status (0 compiled, 1 errors, 4 the compiler failed), what javac
 * printed (as its command line prints it), then each class file's path (as `-d` would
 * lay it out) and bytes. Stdin's end ends the server.
 */
public final class Server {
    private Server() {}

    public static void main(String[] args) throws IOException {
        DataInputStream in = new DataInputStream(
                new BufferedInputStream(new FileInputStream(FileDescriptor.in)));
        DataOutputStream out = new DataOutputStream(
                new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)));
        // Only answers go to the protocol channel.
        System.setOut(System.err);
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        StandardJavaFileManager standard =
                compiler.getStandardFileManager(null, Locale.ROOT, StandardCharsets.UTF_8);
        while (true) {
            List<byte[]> request;
            try {
                request = read(in);
            } catch (EOFException end) {
                return;
            }
            List<byte[]> answer;
            try {
                answer = compile(compiler, standard, request);
            } catch (OutOfMemoryError e) {
                // A JVM that ran out of memory is not trusted with the next program.
                write(out, List.of(text("137"), text("javac ran out of memory")));
                System.exit(3);
                return;
            }
            write(out, answer);
        }
    }

    private static List<byte[]> compile(JavaCompiler compiler, StandardJavaFileManager standard,
                                        List<byte[]> request) {
        int at = 0;
        if (!"compile".equals(string(request.get(at++)))) {
            return List.of(text("2"), text("evaluator_compiler: unknown request"));
        }
        int optionCount = Integer.parseInt(string(request.get(at++)));
        List<String> options = new ArrayList<>();
        for (int i = 0; i < optionCount; i++) {
            options.add(string(request.get(at++)));
        }
        int sourceCount = Integer.parseInt(string(request.get(at++)));
        List<JavaFileObject> sources = new ArrayList<>();
        for (int i = 0; i < sourceCount; i++) {
            String name = string(request.get(at++));
            sources.add(new Source(name, string(request.get(at++))));
        }
        Outputs outputs = new Outputs(standard);
        StringWriter printed = new StringWriter();
        PrintWriter writer = new PrintWriter(printed);
        int status;
        try {
            Boolean ok = compiler.getTask(writer, outputs, null, options, null, sources).call();
            status = Boolean.TRUE.equals(ok) ? 0 : 1;
        } catch (OutOfMemoryError e) {
            throw e;
        } catch (RuntimeException | StackOverflowError e) {
            // javac's command line reports these as an abnormal end, status 4.
            Throwable cause = e.getCause() != null && e instanceof IllegalStateException
                    ? e.getCause() : e;
            writer.println("An exception has occurred in the compiler. " + cause);
            status = 4;
        }
        writer.flush();
        List<byte[]> answer = new ArrayList<>();
        answer.add(text(Integer.toString(status)));
        answer.add(text(printed.toString()));
        if (status == 0) {
            for (Map.Entry<String, ByteArrayOutputStream> entry : outputs.classes.entrySet()) {
                answer.add(text(entry.getKey().replace('.', '/') + ".class"));
                answer.add(entry.getValue().toByteArray());
            }
        }
        return answer;
    }

    /** A source file held in memory; diagnostics name it as javac names a file. */
    private static final class Source extends SimpleJavaFileObject {
        private final String name;
        private final String text;

        Source(String name, String text) {
            super(URI.create("memory:///" + name), Kind.SOURCE);
            this.name = name;
            this.text = text;
        }

        @Override
        public String getName() {
            return name;
        }

        @Override
        public CharSequence getCharContent(boolean ignoreEncodingErrors) {
            return text;
        }
    }

    /** Class files go to memory; everything else is the standard file manager's. */
    private static final class Outputs extends ForwardingJavaFileManager<JavaFileManager> {
        final Map<String, ByteArrayOutputStream> classes = new LinkedHashMap<>();

        Outputs(JavaFileManager standard) {
            super(standard);
        }

        @Override
        public JavaFileObject getJavaFileForOutput(Location location, String className,
                                                   JavaFileObject.Kind kind, FileObject sibling)
                throws IOException {
            if (kind != JavaFileObject.Kind.CLASS) {
                return super.getJavaFileForOutput(location, className, kind, sibling);
            }
            return new SimpleJavaFileObject(
                    URI.create("memory:///" + className.replace('.', '/') + ".class"), kind) {
                @Override
                public OutputStream openOutputStream() {
                    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                    classes.put(className, bytes);
                    return bytes;
                }
            };
        }

        @Override
        public void close() {
            // The standard file manager (and its caches) serves the next request too.
        }
    }

    private static List<byte[]> read(DataInputStream in) throws IOException {
        int count = in.readInt();
        List<byte[]> items = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            byte[] item = new byte[in.readInt()];
            in.readFully(item);
            items.add(item);
        }
        return items;
    }

    private static void write(DataOutputStream out, List<byte[]> items) throws IOException {
        out.writeInt(items.size());
        for (byte[] item : items) {
            out.writeInt(item.length);
            out.write(item);
        }
        out.flush();
    }

    private static byte[] text(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }

    private static String string(byte[] value) {
        return new String(value, StandardCharsets.UTF_8);
    }
}
