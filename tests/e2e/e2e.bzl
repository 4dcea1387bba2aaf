"""An end-to-end test: the operator binary and gpu-sim as child processes against the
real local control plane. It runs alone ("exclusive": the operator acts on every plan in
the cluster), is never cached ("external": its result depends on a live cluster), and runs
outside the sandbox ("local")."""

def e2e_test(name, srcs = None, data = [], deps = []):
    native.cc_test(
        name = name,
        size = "enormous",
        srcs = srcs or [name + ".cpp"],
        data = [
            "//:gpu-partitioner",
            "//manifests/samples",
            "//tools/simulator:dcm-config.json",
            "//tools/simulator:gpu-sim",
        ] + data,
        tags = [
            "exclusive",
            "external",
            "integration",
            "local",
        ],
        deps = [
            ":e2e_support",
            "//kube",
            "//tests/support:test_main",
        ] + deps,
    )
