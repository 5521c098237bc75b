// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader.testkit;

import dev.granary.loader.Collator;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.LoaderOptions;
import dev.granary.loader.Sample;
import dev.granary.loader.Shuffle;
import dev.granary.loader.Starvation;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * Every option of {@link DataLoader.Builder}, each with a call that sets it to a value other than its default: for
 * the tests that prove that an API built on the loader's builder — the DJL and DL4J adapters — passes every option on
 * to its loader (docs/decisions/0020-one-home-per-option.md).
 *
 * <p>The options are the builder's public setters, found by reflection (public instance methods that take arguments
 * and return the builder), never a list written here: an option added to the loader is a case here at once. For each,
 * {@link #all(Dataset)} tries arguments from {@link #CANDIDATES} (by parameter type; every constant of an enum) on a
 * builder configured with {@link #BASE}, builds the loader, and keeps the first call the builder and
 * {@code build()} accept that changes {@link DataLoader#options()}. A setter no candidate changes fails the search:
 * either {@link LoaderOptions} lacks its option, or its parameter type needs candidates here.
 */
public final class LoaderOptionCases {

    /**
     * What every case starts from, applied before it, through the same way in as the case: room for options that
     * depend on others ({@code ranksPerNode} must divide the world size) and a batch size small enough for a few
     * batches per rank of a small dataset.
     */
    public static final Consumer<DataLoader.Builder<?>> BASE =
            options -> options.batchSize(4).shard(0, 2);

    /** A starvation listener that does nothing, as a value for {@code starvationListener}. */
    private record Listener() implements Consumer<Starvation> {
        @Override
        public void accept(Starvation starvation) {}
    }

    /** A collator that writes nothing, as a value for {@code staging} and the staging the adapters bring. */
    private record WritesNothing() implements Collator<Object> {
        @Override
        public long collate(List<Object> items, MemorySegment staging) {
            return 0;
        }
    }

    private static final Collator<Object> NOTHING = new WritesNothing();

    /**
     * The staging the loaders built here have, standing in for the adapters' own, so that options that need it apply.
     */
    private static final long STAND_IN_STAGING_BYTES = 4096;

    /**
     * Candidate arguments by parameter type, in the order they are tried; enums are tried with every constant. A
     * setter with a parameter of another type fails {@link #all(Dataset)}, saying to add candidates here.
     */
    static final Map<Class<?>, List<?>> CANDIDATES = Map.of(
            int.class, List.of(3, 1, 2, 0, 4 << 20),
            long.class, List.of(3L, 5L << 20),
            boolean.class, List.of(true, false),
            double.class, List.of(0.5),
            Duration.class, List.of(Duration.ofSeconds(7)),
            Shuffle.class, List.of(Shuffle.samples(3L)),
            Consumer.class, List.of(new Listener()),
            Collator.class, List.of(NOTHING));

    private LoaderOptionCases() {}

    /**
     * One option set to a non-default value.
     *
     * @param setter    the builder's setter
     * @param arguments its arguments
     * @param expected  the options of a loader built directly with {@link #BASE} and this call
     * @param changed   the components of {@link LoaderOptions} this call changes from {@link #BASE}'s, never empty
     */
    public record Case(Method setter, List<Object> arguments, LoaderOptions expected, List<RecordComponent> changed) {

        /** {@return the setter's name} */
        public String name() {
            return setter.getName();
        }

        /**
         * Makes this call on a loader's builder.
         *
         * @param options the builder
         * @throws IllegalArgumentException as the setter does
         */
        public void apply(DataLoader.Builder<?> options) {
            invoke(setter, options, arguments.toArray());
        }

        /**
         * Checks that a loader built through some other way in has this option as a loader built directly has it.
         *
         * @param actual the other loader's {@link DataLoader#options()}
         * @param where  what built it, for the message
         * @throws AssertionError if a component this call changes differs
         */
        public void assertReached(LoaderOptions actual, String where) {
            for (RecordComponent c : changed) {
                Object want = component(c, expected);
                Object got = component(c, actual);
                if (!Objects.equals(want, got)) {
                    throw new AssertionError(this + " did not reach the loader of " + where + ": its " + c.getName()
                            + " is " + got + " (expected: " + want + ", as DataLoader.builder(...)." + this
                            + " gives)");
                }
            }
        }

        @Override
        public String toString() {
            return name() + arguments.stream().map(String::valueOf).collect(Collectors.joining(", ", "(", ")"));
        }
    }

    /**
     * {@return the public setters of {@link DataLoader.Builder}, by name and parameter types}: its public instance
     * methods that take arguments and return the builder
     */
    public static List<Method> setters() {
        return Arrays.stream(DataLoader.Builder.class.getMethods())
                .filter(m -> !Modifier.isStatic(m.getModifiers())
                        && m.getParameterCount() > 0
                        && m.getReturnType() == DataLoader.Builder.class)
                .sorted(Comparator.comparing(LoaderOptionCases::signature))
                .toList();
    }

    /**
     * Finds a non-default call for every setter, building loaders over {@code samples} directly.
     *
     * @param samples a dataset of at least 8 samples whose cache stays open meanwhile
     * @return one case per setter, in the order of {@link #setters()}
     * @throws AssertionError naming every setter for which no candidate changed the loader's options
     */
    public static List<Case> all(Dataset samples) {
        LoaderOptions base = direct(samples, null, null);
        List<Case> cases = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        for (Method setter : setters()) {
            Case found = find(samples, base, setter, new Object[setter.getParameterCount()], 0);
            if (found == null) {
                missing.add(signature(setter));
            } else {
                cases.add(found);
            }
        }
        if (!missing.isEmpty()) {
            throw new AssertionError("no value tried for " + missing + " changed DataLoader.options() (expected:"
                    + " every option of DataLoader.Builder in LoaderOptions, with candidate values for its parameter"
                    + " types in LoaderOptionCases.CANDIDATES)");
        }
        return cases;
    }

    /** The first candidate arguments from {@code at} on that build and change the options, or null. */
    private static Case find(Dataset samples, LoaderOptions base, Method setter, Object[] args, int at) {
        if (at == args.length) {
            List<Object> arguments = List.of(args.clone());
            LoaderOptions options;
            try {
                options = direct(samples, setter, arguments);
            } catch (IllegalArgumentException refused) {
                return null; // out of range, or refused by build() with the base's other options: try the next
            }
            List<RecordComponent> changed = Arrays.stream(LoaderOptions.class.getRecordComponents())
                    .filter(c -> !Objects.equals(component(c, base), component(c, options)))
                    .toList();
            return changed.isEmpty() ? null : new Case(setter, arguments, options, changed);
        }
        for (Object candidate : candidates(setter, setter.getParameterTypes()[at])) {
            args[at] = candidate;
            Case found = find(samples, base, setter, args, at + 1);
            if (found != null) {
                return found;
            }
        }
        return null;
    }

    private static List<?> candidates(Method setter, Class<?> type) {
        if (type.isEnum()) {
            return List.of(type.getEnumConstants());
        }
        List<?> values = CANDIDATES.get(type);
        if (values == null) {
            throw new AssertionError(signature(setter) + ": no candidate values of " + type.getName()
                    + " (expected: some in LoaderOptionCases.CANDIDATES)");
        }
        return values;
    }

    /** The options of a loader built directly with the base, the stand-in staging and the setter's call, if any. */
    private static LoaderOptions direct(Dataset samples, Method setter, List<Object> arguments) {
        DataLoader.Builder<Object> options = DataLoader.builder(samples, Sample::index);
        BASE.accept(options);
        options.staging(STAND_IN_STAGING_BYTES, NOTHING);
        if (setter != null) {
            invoke(setter, options, arguments.toArray());
        }
        try (DataLoader<Object> loader = options.build()) {
            return loader.options();
        }
    }

    private static void invoke(Method setter, DataLoader.Builder<?> options, Object[] arguments) {
        try {
            setter.invoke(options, arguments);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new AssertionError(signature(setter) + " threw " + e.getCause(), e.getCause());
        } catch (IllegalAccessException e) {
            throw new AssertionError(signature(setter) + " is not accessible", e);
        }
    }

    private static Object component(RecordComponent c, LoaderOptions options) {
        try {
            return c.getAccessor().invoke(options);
        } catch (IllegalAccessException | InvocationTargetException e) {
            throw new LinkageError("LoaderOptions." + c.getName() + "()", e);
        }
    }

    private static String signature(Method m) {
        return m.getName()
                + Arrays.stream(m.getParameterTypes())
                        .map(Class::getSimpleName)
                        .collect(Collectors.joining(", ", "(", ")"));
    }
}
