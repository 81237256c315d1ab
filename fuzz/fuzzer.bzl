"""A fuzz target and the test that replays its seed corpus."""

def tc_fuzzer(name, deps, corpus = None):
    """Declares `<name>_fuzzer` and `<name>_corpus_test`.

    `<name>_fuzzer` is the libFuzzer binary; it builds only under
    `--config=fuzz` (clang), which tools/fuzz.sh passes. `<name>_corpus_test`
    runs the same target over `corpus/<corpus>` (`corpus` defaults to
    `name`) with a plain main, in every build, so each seed keeps giving a
    status or a result.
    """
    corpus = corpus or name
    srcs = [name + "_fuzzer.cc"]
    deps = deps + ["//fuzz:fuzz_input"]
    native.cc_binary(
        name = name + "_fuzzer",
        srcs = srcs,
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
        deps = deps,
    )
    native.cc_test(
        name = name + "_corpus_test",
        srcs = srcs,
        args = ["fuzz/corpus/" + corpus],
        data = native.glob(["corpus/" + corpus + "/*"]),
        deps = deps + ["//fuzz:replay_main"],
    )
