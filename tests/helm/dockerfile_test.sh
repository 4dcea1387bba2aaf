#!/usr/bin/env bash
# deploy/Dockerfile cannot be built here (no container runtime, no base images), so
# this checks what can be checked without it: the runtime stage installs a package for
# every shared library the built operator needs (readelf NEEDED, mapped to the Debian
# package that ships it on this machine, which runs the same Debian release), runs as a
# numeric non-root user, and the build stage builds //:gpu-partitioner.
set -uo pipefail
source tests/support/shtest.sh

dockerfile=deploy/Dockerfile
binary=gpu-partitioner

# The package names of the runtime stage's apt-get install (after the last FROM).
runtime_packages() {
  awk '/^FROM/ {stage++} {print stage "\t" $0}' "$dockerfile" |
    awk -F'\t' -v last="$(grep -c '^FROM' "$dockerfile")" '$1 == last {print $2}' |
    sed -n '/apt-get install/,/rm -rf/p' | tr ' \\' '\n\n' |
    grep -E '^[a-z0-9][a-z0-9.+-]+$' | grep -vE '^(apt-get|install|rm|update|DEBIAN_FRONTEND.*)$'
}

every_needed_library_has_its_package_in_the_runtime_stage() {
  local lib path pkg missing=()
  mapfile -t wanted < <(runtime_packages)
  [ "${#wanted[@]}" -ge 6 ] || { echo "found only: ${wanted[*]}"; return 1; }
  for lib in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    case $lib in libc.so.* | libm.so.* | ld-linux-*) continue ;; esac # libc6: in every image
    path=$(ldd "$binary" | awk -v l="$lib" '$1 == l && $2 == "=>" {print $3; exit}')
    [ -n "$path" ] || { echo "$lib: not found by ldd"; return 1; }
    # dpkg knows a file by one of its names (merged /usr: /lib or /usr/lib, link or target).
    pkg=
    for p in "$path" "$(readlink -f "$path")" "/usr$path" "${path#/usr}"; do
      pkg=$(dpkg -S "$p" 2>/dev/null | head -n1 | cut -d: -f1) || true
      [ -z "$pkg" ] || break
    done
    [ -n "$pkg" ] || { echo "$lib ($path): no Debian package ships it"; return 1; }
    echo "$lib -> $pkg"
    printf '%s\n' "${wanted[@]}" | grep -qx "$pkg" || missing+=("$pkg ($lib)")
  done
  [ "${#missing[@]}" -eq 0 ] || { echo "not in the runtime stage: ${missing[*]}"; return 1; }
}

runs_as_a_numeric_non_root_user() {
  local user
  user=$(sed -n 's/^USER \([0-9]*\):[0-9]*$/\1/p' "$dockerfile" | tail -n1)
  [ -n "$user" ] && [ "$user" -ne 0 ]
  grep -q "runAsUser: $user\$" helm/gpu-partitioner/values.yaml
}

builds_the_operator_with_bazel_and_copies_only_the_binary() {
  grep -q 'bazel build .*//:gpu-partitioner' "$dockerfile"
  [ "$(grep -c '^FROM' "$dockerfile")" -eq 2 ]
  [ "$(grep -c '^COPY --from=build' "$dockerfile")" -eq 1 ]
}

run_case every_needed_library_has_its_package_in_the_runtime_stage every_needed_library_has_its_package_in_the_runtime_stage
run_case runs_as_a_numeric_non_root_user runs_as_a_numeric_non_root_user
run_case builds_the_operator_with_bazel_and_copies_only_the_binary builds_the_operator_with_bazel_and_copies_only_the_binary
finish
