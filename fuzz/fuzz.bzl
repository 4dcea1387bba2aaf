"""fuzz_target: one libFuzzer entry point (LLVMFuzzerTestOneInput), built three ways.

  NAME_fuzzer       the fuzzer. With --config=fuzz (clang, tools/fuzz) it links libFuzzer's
                    main; in every other build it links replay_main.cc, which runs the
                    inputs named on the command line once each.
  NAME_corpus_test  a test that replays corpus/NAME/ (the seed corpus and every input a
                    crash was once found with) through the same checks; part of
                    `bazel test //...`, and of the sanitizer runs.
"""

def fuzz_target(name, srcs, deps = [], data = []):
    native.cc_library(
        name = name + "_entry",
        testonly = True,
        srcs = srcs,
        deps = deps + [":check"],
        alwayslink = True,
    )
    native.cc_binary(
        name = name + "_fuzzer",
        testonly = True,
        deps = [":" + name + "_entry", ":engine"],
        data = data,
    )
    native.cc_test(
        name = name + "_corpus_test",
        size = "small",
        # Runs in the runfiles tree, where the corpus sits at its source path.
        args = ["fuzz/corpus/" + name],
        data = data + native.glob(["corpus/%s/**" % name]),
        deps = [":" + name + "_entry", ":replay_main"],
    )
