package evaluator_harness;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

/**
 * Runs the program's main class as `java MainClass` would, and reports `done` when its
 * main method returns. An exception out of main is reported and ends the run with
 * status 1, as the JVM would; System.exit() from the program skips `done`.
 */
public final class Launch {
    private Launch() {}

    public static void main(String[] args) throws Throwable {
        Channel.open();
        String mainClass = args[0];
        String[] rest = new String[args.length - 1];
        System.arraycopy(args, 1, rest, 0, rest.length);
        Method main;
        try {
            Class<?> cls = Class.forName(mainClass, false, Launch.class.getClassLoader());
            main = cls.getDeclaredMethod("main", String[].class);
            if (!Modifier.isStatic(main.getModifiers())) {
                throw new NoSuchMethodException("main is not static");
            }
            main.setAccessible(true);
        } catch (ReflectiveOperationException | LinkageError e) {
            System.err.println("Error: could not find or load main class " + mainClass + ": " + e);
            Channel.emit("{\"kind\":\"exception\",\"where\":\"launcher\",\"error_type\":"
                    + Channel.quote(e.getClass().getName()) + ",\"message\":"
                    + Channel.quote(String.valueOf(e.getMessage())) + "}");
            System.exit(1);
            return;
        }
        try {
            main.invoke(null, (Object) rest);
        } catch (InvocationTargetException wrapped) {
            Throwable error = wrapped.getCause();
            System.out.flush();
            System.err.print("Exception in thread \"main\" ");
            error.printStackTrace();
            Channel.emit("{\"kind\":\"exception\",\"where\":\"program\",\"error_type\":"
                    + Channel.quote(Site.typeName(error)) + ",\"message\":"
                    + Channel.quote(Site.cap(String.valueOf(error.getMessage()), 2000))
                    + (error instanceof OutOfMemoryError ? ",\"memory\":true" : "") + "}");
            System.exit(1);
            return;
        }
        System.out.flush();
        Channel.emit("{\"kind\":\"done\",\"tests\":" + Site.count() + "}");
    }
}
