#!/usr/bin/env bash
# tools/plugin-package: the archive runs kubectl-partitioning with nothing of the host's
# but the kernel. Extracted into an empty folder, its entry point runs with an empty
# environment and loads every library from the archive (LD_DEBUG says which); chrooted
# into a root holding only the archive's files, the binary runs (root needed). The krew
# manifest carries the archive's sha256, and the same tree gives the same archive.
set -uo pipefail
source tests/support/shtest.sh
# chroot is in sbin, which the test's PATH may not hold.
export PATH="$PATH:/usr/sbin:/sbin"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
binary=cli/kubectl-partitioning
version=$(sed -n 's/.*version = "\(.*\)";.*/\1/p' protocol/version.hpp)
archive_name=kubectl-partitioning-v$version-linux-amd64.tar.gz

package() { # OUT_DIR
  SOURCE_DATE_EPOCH=0 tools/plugin-package --binary "$binary" --out "$1" --manifest "$1/partitioning.yaml" \
    --uri "https://example.invalid/$archive_name" >/dev/null
}

archive_and_manifest_agree_and_are_reproducible() {
  package "$work/a"
  package "$work/b"
  local sha
  sha=$(sha256sum "$work/a/$archive_name" | cut -d' ' -f1)
  [ "$sha" = "$(sha256sum "$work/b/$archive_name" | cut -d' ' -f1)" ] || { echo "two builds, two archives"; return 1; }
  grep -q "^apiVersion: krew.googlecontainertools.github.com/v1alpha2$" "$work/a/partitioning.yaml"
  grep -q "^    sha256: $sha$" "$work/a/partitioning.yaml"
  grep -q "^  version: v$version$" "$work/a/partitioning.yaml"
  grep -q "^    bin: kubectl-partitioning$" "$work/a/partitioning.yaml"
  grep -q "^    uri: https://example.invalid/$archive_name$" "$work/a/partitioning.yaml"
  ! grep -q "@[A-Z0-9]*@" "$work/a/partitioning.yaml"
  # Licences travel with the libraries.
  local listing
  listing=$(tar tzf "$work/a/$archive_name")
  for entry in share/doc/libc6/copyright share/doc/libcurl4/copyright LICENSE kubectl-partitioning \
    libexec/kubectl-partitioning lib/ld-linux-x86-64.so.2 lib/libcurl.so.4; do
    grep -qx "$entry" <<<"$listing" || { echo "no $entry in the archive"; return 1; }
  done
}

runs_with_an_empty_environment_on_the_bundled_libraries_only() {
  [ -f "$work/a/$archive_name" ] || package "$work/a"
  local dir="$work/extracted" out
  mkdir -p "$dir"
  tar xzf "$work/a/$archive_name" -C "$dir"
  # krew links the entry point into its bin folder: run it through a link, as users do.
  mkdir -p "$work/bin"
  ln -s "$dir/kubectl-partitioning" "$work/bin/kubectl-partitioning"
  out=$(env -i PATH=/usr/bin:/bin LD_DEBUG=libs "$work/bin/kubectl-partitioning" version 2>"$work/ld.log")
  [ "$out" = "kubectl-partitioning $version" ] || { echo "version said: $out"; cat "$work/ld.log"; return 1; }
  # Every library the loader initialised for the plugin is the archive's. The log also has
  # the entry point's sh and its readlink and dirname (the host's, as they should be): the
  # plugin is the process that initialised the archive's libc, after sh exec'd into it.
  local pid inits foreign plugin_log
  pid=$(grep "calling init: $dir/lib/libc.so.6" "$work/ld.log" | awk -F: '{gsub(/ /, "", $1); print $1}')
  [ -n "$pid" ] || { echo "the archive's libc was never initialised:"; cat "$work/ld.log"; return 1; }
  plugin_log=$(grep -E "^ *$pid:" "$work/ld.log" | sed '1,/transferring control:/d')
  inits=$(grep -c "calling init: " <<<"$plugin_log")
  foreign=$(grep "calling init: " <<<"$plugin_log" | grep -v "calling init: $dir/lib/" || true)
  [ "$inits" -ge 5 ] || { echo "only $inits libraries initialised:"; cat "$work/ld.log"; return 1; }
  [ -z "$foreign" ] || { echo "host libraries used:"; echo "$foreign"; return 1; }
}

runs_in_a_root_that_holds_only_the_archive() {
  [ "$(id -u)" -eq 0 ] || { echo "needs root (chroot)"; return 1; }
  [ -f "$work/a/$archive_name" ] || package "$work/a"
  local root="$work/root" out
  mkdir -p "$root/plugin"
  tar xzf "$work/a/$archive_name" -C "$root/plugin"
  # No /bin/sh in there: the loader is run as the entry point's script would run it.
  out=$(env -i "$(command -v chroot)" "$root" /plugin/lib/ld-linux-x86-64.so.2 --library-path /plugin/lib \
    /plugin/libexec/kubectl-partitioning version)
  [ "$out" = "kubectl-partitioning $version" ] || { echo "version said: $out"; return 1; }
  # A command that reaches the kubeconfig reader (yaml-cpp) fails as it should, naming it.
  out=$(env -i "$(command -v chroot)" "$root" /plugin/lib/ld-linux-x86-64.so.2 --library-path /plugin/lib \
    /plugin/libexec/kubectl-partitioning --kubeconfig /none list 2>&1) && { echo "succeeded: $out"; return 1; }
  grep -q 'cannot read "/none"' <<<"$out" || { echo "said: $out"; return 1; }
}

run_case archive_and_manifest_agree_and_are_reproducible archive_and_manifest_agree_and_are_reproducible
run_case runs_with_an_empty_environment_on_the_bundled_libraries_only runs_with_an_empty_environment_on_the_bundled_libraries_only
run_case runs_in_a_root_that_holds_only_the_archive runs_in_a_root_that_holds_only_the_archive
finish
