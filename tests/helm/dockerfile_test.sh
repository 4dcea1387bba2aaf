#!/usr/bin/env bash
# deploy/Dockerfile cannot be built here (no docker, no base images). It must give the
# image tools/image gives (tests/image builds and runs that one), so this checks what
# makes them the same: the build stage builds //:gpu-partitioner and assembles the root
# file system with `tools/image --rootfs` from packages it installs, the image is that
# directory alone (FROM scratch), and its user, entrypoint, ports and labels are
# tools/image's.
set -uo pipefail
source tests/support/shtest.sh

dockerfile=deploy/Dockerfile
binary=gpu-partitioner

# stage N: the lines of the Nth stage (1 = build), continuation lines joined.
stage() {
  sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$dockerfile" | grep -v '^#' |
    awk -v want="$1" '/^FROM / {n++} n == want'
}

# python3 -c EXPR: a constant of tools/lib/oci_image.py.
tool() { python3 -c "import sys; sys.path.insert(0, 'tools/lib'); import oci_image as t; print($1)"; }

the_build_stage_builds_the_operator_and_assembles_the_rootfs_with_tools_image() {
  [ "$(grep -c '^FROM' "$dockerfile")" -eq 2 ]
  stage 1 | grep '^FROM debian:bookworm AS build$' >/dev/null
  stage 1 | grep -Eq 'bazel build .*-c opt //:gpu-partitioner'
  stage 1 | grep -Eq 'tools/image --rootfs /rootfs --binary bazel-bin/gpu-partitioner'
}

the_image_is_the_rootfs_alone_from_scratch() {
  stage 2 | grep '^FROM scratch$' >/dev/null
  [ "$(stage 2 | grep -Ec '^(COPY|ADD|RUN)')" -eq 1 ]
  stage 2 | grep '^COPY --from=build /rootfs /$' >/dev/null
}

it_runs_as_tools_image_configures_it() {
  local user version
  user=$(tool '"%d:%d" % (t.USER, t.USER)')
  version=$(sed -n 's/.*version = "\(.*\)";.*/\1/p' protocol/version.hpp)
  stage 2 | grep -x "USER $user" >/dev/null
  grep -q "runAsUser: ${user%%:*}\$" helm/gpu-partitioner/values.yaml
  stage 2 | grep -xF "ENTRYPOINT [\"$(tool '"/" + t.BINARY_PATH')\"]" >/dev/null
  stage 2 | grep -x "EXPOSE $(tool '" ".join(t.PORTS)')" >/dev/null
  stage 2 | grep -x "ENV $(tool 't.DEFAULT_PATH')" >/dev/null
  stage 2 | grep "org.opencontainers.image.version=$version\( \|$\)" >/dev/null
  stage 2 | grep 'org.opencontainers.image.revision=\$REVISION' >/dev/null
}

# tools/image --rootfs copies the runtime libraries from the build stage's packages:
# each library the binary loads (ldd: the whole closure) must come from a package the
# stage installs or one those depend on (Depends and Pre-Depends, as dpkg records them
# on this machine, which runs the same Debian release).
the_build_stage_installs_every_package_the_rootfs_takes() {
  local packages
  packages=$(stage 1 | sed -n 's/.*apt-get install -y --no-install-recommends\(.*\) && rm .*/\1/p')
  for p in python3 tzdata ca-certificates; do
    grep -qw -- "$p" <<<"$packages" || { echo "$p is not installed in the build stage"; return 1; }
  done
  # shellcheck disable=SC2086 # one argument per package
  LIBS=$(ldd "$binary" | awk '$2 == "=>" {print $3}') python3 - $packages <<'EOF'
import os, re, subprocess, sys
def run(*argv):
    return subprocess.run(argv, capture_output=True, text=True).stdout
# Everything the listed packages pull in.
seen, todo = set(), list(sys.argv[1:])
while todo:
    p = todo.pop()
    if p in seen:
        continue
    seen.add(p)
    deps = run("dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", p)
    for alternative in deps.split(","):
        for name in alternative.split("|"):
            name = re.sub(r"\(.*?\)|:any|\s", "", name)
            if name:
                todo.append(name)
missing = []
for lib in os.environ["LIBS"].split():
    owner = ""
    for alias in (lib, "/usr" + lib, lib[4:] if lib.startswith("/usr/") else lib):
        owner = run("dpkg-query", "-S", alias).split(":")[0]
        if owner:
            break
    if owner not in seen:
        missing.append("%s (%s)" % (lib, owner or "no package"))
    print(lib, "->", owner)
assert not missing, "not installed by the build stage: " + ", ".join(missing)
EOF
}

run_case the_build_stage_builds_the_operator_and_assembles_the_rootfs_with_tools_image \
  the_build_stage_builds_the_operator_and_assembles_the_rootfs_with_tools_image
run_case the_image_is_the_rootfs_alone_from_scratch the_image_is_the_rootfs_alone_from_scratch
run_case it_runs_as_tools_image_configures_it it_runs_as_tools_image_configures_it
run_case the_build_stage_installs_every_package_the_rootfs_takes the_build_stage_installs_every_package_the_rootfs_takes
finish
