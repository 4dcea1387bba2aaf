#!/usr/bin/env bash
# tools/image: the layout is a valid OCI image whose one layer holds what the operator
# needs to run (and nothing owned by another user, nothing setuid), the operator runs in
# it as user 65532, a second build gives the same digest, and containerd imports the
# archive and runs it with the chart's security context against a real API server.
set -uo pipefail
source tests/support/shtest.sh
source tools/lib/common.sh
# chroot and runc (which containerd's shim finds on PATH) are in sbin, which tools/test's
# PATH for tests leaves out.
PATH=$PATH:/usr/sbin:/sbin

binary=$PWD/gpu-partitioner
probe=$PWD/tests/image/zone_probe
values=helm/gpu-partitioner/values.yaml
version=$(sed -n 's/.*version = "\(.*\)";.*/\1/p' protocol/version.hpp)
epoch=1700000000
revision=0123456789abcdef0123456789abcdef01234567
tag=registry.example.com/gpu-partitioner:test
# Short: containerd's socket path must fit in a sockaddr_un.
work=$(mktemp -d /tmp/gp-image.XXXXXX)
layout=$work/a/layout
root=$work/root
ctd=$work/containerd
namespace=image-test-$$
ctr_() { ctr --address "$ctd/sock" -n k8s.io "$@"; }

cleanup() {
  if [ -s "$ctd/pid" ]; then
    # A container outlives containerd (its shim keeps it): each goes first.
    local task
    for task in $(ctr_ task ls -q 2>/dev/null); do
      ctr_ task kill -s SIGKILL "$task" >/dev/null 2>&1
      ctr_ task delete -f "$task" >/dev/null 2>&1
    done
    kill "$(cat "$ctd/pid")" 2>/dev/null
    sleep 1
  fi
  # Snapshots a dead containerd left mounted must not be deleted through.
  awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r | xargs -r umount -l
  rm -rf -- "$work"
  [ -z "${KUBECONFIG:-}" ] || kubectl delete namespace "$namespace" --wait=false >/dev/null 2>&1
}
trap cleanup EXIT

build() { # build OUT: prints the manifest digest
  SOURCE_DATE_EPOCH=$epoch tools/image --binary "$binary" --out "$1" --tag "$tag" \
    --revision "$revision" | sed -n 's/^manifest: //p'
}

needs_root() {
  [ "$(id -u)" -eq 0 ] || { echo "needs root ($1)"; return 1; }
}

checks() { python3 tests/image/image_checks.py "$@"; }

digest_a=$(build "$work/a")
layer_blob() { # the layer's file in $layout
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"][7:])' \
    "$layout/blobs/sha256/${digest_a#sha256:}"
}
mkdir -p "$root"
[ -z "$digest_a" ] || tar -xzf "$layout/blobs/sha256/$(layer_blob)" -C "$root"

layout_descriptors_match_their_blobs() {
  [ -n "$digest_a" ]
  checks layout "$layout" "$digest_a" "$tag"
}

config_runs_the_operator_as_the_chart_does() {
  local user metrics health
  user=$(sed -n 's/^  runAsUser: \([0-9]*\)$/\1/p' "$values")
  metrics=$(sed -n '/^metrics:/,/^[a-z]/s/^  port: \([0-9]*\)$/\1/p' "$values")
  health=$(sed -n '/^health:/,/^[a-z]/s/^  port: \([0-9]*\)$/\1/p' "$values")
  checks config "$layout" "$user" "$metrics" "$health" "$version" "$revision" "$epoch"
}

layer_is_sorted_root_owned_and_never_setuid() {
  checks layer "$layout" "$epoch"
}

every_needed_library_is_in_the_layer() {
  checks needed "$root"
}

# No /etc/ld.so.cache in the image: the loader finds the libraries in its default
# directories, as it will in a container.
the_operator_runs_in_the_layer_as_user_65532() {
  needs_root chroot
  [ ! -e "$root/etc/ld.so.cache" ]
  [ "$(chroot --userspec=65532:65532 "$root" /usr/local/bin/gpu-partitioner --version)" = "gpu-partitioner $version" ]
}

change_window_zones_resolve_in_the_layer() {
  needs_root chroot
  cp "$probe" "$root/zone_probe"
  local out
  out=$(chroot --userspec=65532:65532 "$root" /zone_probe Europe/Berlin America/New_York UTC)
  rm -f "$root/zone_probe"
  echo "$out"
  [ "$out" = $'Europe/Berlin 120\nAmerica/New_York -240\nUTC 0' ]
}

# Every file but the few tools/image writes itself; links to directories (/lib -> usr/lib)
# are the layout, not a package's files.
every_file_names_its_debian_package_and_licence() {
  local list=$root/usr/share/gpu-partitioner/packages.txt package missing=0 unlisted
  grep -q '^/usr/lib/x86_64-linux-gnu/libcurl.so.4	libcurl4' "$list"
  grep -q '^/usr/share/zoneinfo/Europe/Berlin	tzdata	' "$list"
  unlisted=$(comm -23 \
    <(cd "$root" && find . \( -type f -o -type l \) ! -xtype d | sed 's/^\.//' | sort) \
    <(grep -v '^#' "$list" | cut -f1 | sort) |
    grep -vxE '/usr/local/bin/gpu-partitioner|/etc/(passwd|group|nsswitch.conf)|/usr/share/gpu-partitioner/packages.txt') || true
  [ -z "$unlisted" ] || { echo "in no package of packages.txt:"; echo "$unlisted"; missing=1; }
  for package in $(grep -v '^#' "$list" | cut -f2 | sort -u); do
    [ -f "$root/usr/share/doc/${package%%:*}/copyright" ] ||
      { echo "$package: no copyright file"; missing=1; }
  done
  [ "$missing" -eq 0 ]
  echo "$(grep -vc '^#' "$list") files from $(grep -v '^#' "$list" | cut -f2 | sort -u | wc -l) packages"
}

a_second_build_gives_the_same_manifest_digest() {
  local digest_b
  digest_b=$(build "$work/b")
  echo "first $digest_a, second $digest_b"
  [ -n "$digest_a" ] && [ "$digest_a" = "$digest_b" ]
  cmp "$work/a/image.tar" "$work/b/image.tar"
}

# deploy/Dockerfile copies what `tools/image --rootfs` writes: the same files as the layer.
rootfs_mode_writes_the_layers_files() {
  SOURCE_DATE_EPOCH=$epoch tools/image --binary "$binary" --rootfs "$work/rootfs" >/dev/null
  checks same-tree "$root" "$work/rootfs" "$epoch"
}

short_names_are_named_as_the_kubelet_looks_them_up() {
  python3 - <<'EOF'
import sys
sys.path.insert(0, "tools/lib")
from oci_image import normalized_reference as n
cases = {
    "gpu-partitioner:1": "docker.io/library/gpu-partitioner:1",
    "team/gpu-partitioner:1": "docker.io/team/gpu-partitioner:1",
    "registry.example.com/gpu-partitioner:1": "registry.example.com/gpu-partitioner:1",
    "localhost:5000/gpu-partitioner:1": "localhost:5000/gpu-partitioner:1",
}
for given, want in cases.items():
    assert n(given) == want, (given, n(given), want)
EOF
}

# -- containerd: the consumer of `ctr -n k8s.io images import` --

containerd_imports_the_archive_under_its_name() {
  needs_root containerd
  mkdir -p "$ctd"
  cat >"$ctd/config.toml" <<EOF
version = 2
root = "$ctd/root"
state = "$ctd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$ctd/sock"
EOF
  containerd --config "$ctd/config.toml" >"$ctd/log" 2>&1 &
  echo $! >"$ctd/pid"
  for _ in $(seq 50); do ctr_ version >/dev/null 2>&1 && break; sleep 0.2; done
  ctr_ images import "$work/a/image.tar"
  ctr_ images ls | awk -v t="$tag" -v d="$digest_a" '$1 == t && $3 == d {found = 1} END {exit !found}'
}

# The chart's securityContext: user 65532 (the image's own), read-only root, every
# capability dropped (containerd's default set, one by one), no new privileges, the
# runtime's default seccomp filter. No cgroup of the container's own: none is left behind.
run_flags=(--rm --read-only --seccomp --cgroup "" --runc-root "$work/runc")
for cap in CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID SETFCAP SETPCAP \
  NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE; do
  run_flags+=(--cap-drop "CAP_$cap")
done

the_image_runs_its_entrypoint_under_containerd() {
  needs_root containerd
  local out
  out=$(ctr_ run "${run_flags[@]}" "$tag" "entry-$$" 2>&1) || true
  echo "$out"
  # No flags, no kubeconfig: the operator itself says what is missing, under $HOME from
  # the image's /etc/passwd.
  grep -q 'no configuration: .* /nonexistent/.kube/config' <<<"$out"
}

# In-cluster configuration, as in a pod: the service account's token, CA and namespace
# mounted, KUBERNETES_SERVICE_HOST/PORT set. The account may only take its Lease, so the
# operator writes nothing else in the shared test cluster. The API server listens on
# loopback only: the container shares the host's network.
the_operator_in_the_image_takes_its_lease() {
  needs_root containerd
  [ -n "${KUBECONFIG:-}" ] || { echo "no KUBECONFIG: run under tools/test"; return 1; }
  local sa=$work/serviceaccount server hostport health pid holder=
  kubectl create namespace "$namespace" >/dev/null
  kubectl -n "$namespace" create serviceaccount operator >/dev/null
  kubectl -n "$namespace" create role lease --verb=create,get,update --resource=leases.coordination.k8s.io >/dev/null
  kubectl -n "$namespace" create rolebinding lease --role=lease --serviceaccount="$namespace:operator" >/dev/null
  mkdir -p "$sa"
  kubectl -n "$namespace" create token operator --duration 10m >"$sa/token"
  kubectl config view --raw --minify --flatten -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$sa/ca.crt"
  printf '%s' "$namespace" >"$sa/namespace"
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  hostport=${server#https://}

  ctr_ run "${run_flags[@]}" --net-host --pid-file "$work/operator.pid" \
    --mount "type=bind,src=$sa,dst=/var/run/secrets/kubernetes.io/serviceaccount,options=rbind:ro" \
    --env "KUBERNETES_SERVICE_HOST=${hostport%:*}" --env "KUBERNETES_SERVICE_PORT=${hostport##*:}" \
    "$tag" "operator-$$" /usr/local/bin/gpu-partitioner --leader-elect --lease-namespace "$namespace" \
    --metrics-addr 0 --health-addr 127.0.0.1:0 >"$work/operator.log" 2>&1 &
  local run=$!
  for _ in $(seq 120); do
    holder=$(kubectl -n "$namespace" get lease gpu-partitioner -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) || true
    [ -z "$holder" ] || break
    sleep 0.5
  done
  # What the kernel says of the running operator: its user, capabilities, root mount.
  local status= rootmount= healthz rc=0
  pid=$(cat "$work/operator.pid" 2>/dev/null) || true
  if [ -n "$pid" ]; then
    status=$(grep -E '^(Uid|Gid|CapEff|CapBnd|NoNewPrivs|Seccomp):' "/proc/$pid/status") || true
    rootmount=$(awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo") || true
  fi
  # Port 0: the operator binds what the kernel gives and names it in its log.
  health=$(sed -n '/serving \/healthz and \/readyz on /{s/.*serving \/healthz and \/readyz on \([0-9.:]*\).*/\1/p;q}' "$work/operator.log")
  healthz=$(curl -s -o /dev/null -w '%{http_code}' "http://${health:-127.0.0.1:1}/healthz") || true
  ctr_ task kill -s SIGTERM "operator-$$" >/dev/null 2>&1 || true
  wait "$run" || rc=$?
  echo "lease holder: ${holder:-none}; /healthz: $healthz; root mount: ${rootmount:-?}; exit: $rc"
  echo "$status"
  sed -n '1,8p' "$work/operator.log"
  [ -n "$holder" ]
  [ "$rc" -eq 0 ]
  grep -q 'against https://.* (in-cluster)' "$work/operator.log"
  [ "$healthz" = 200 ]
  [[ $rootmount == ro,* ]]
  grep -Eq '^Uid:\s+65532\s' <<<"$status"
  grep -Eq '^CapEff:\s+0+$' <<<"$status"
  grep -Eq '^CapBnd:\s+0+$' <<<"$status"
  grep -Eq '^NoNewPrivs:\s+1$' <<<"$status"
  grep -Eq '^Seccomp:\s+2$' <<<"$status"
}

run_case layout_descriptors_match_their_blobs layout_descriptors_match_their_blobs
run_case config_runs_the_operator_as_the_chart_does config_runs_the_operator_as_the_chart_does
run_case layer_is_sorted_root_owned_and_never_setuid layer_is_sorted_root_owned_and_never_setuid
run_case every_needed_library_is_in_the_layer every_needed_library_is_in_the_layer
run_case the_operator_runs_in_the_layer_as_user_65532 the_operator_runs_in_the_layer_as_user_65532
run_case change_window_zones_resolve_in_the_layer change_window_zones_resolve_in_the_layer
run_case every_file_names_its_debian_package_and_licence every_file_names_its_debian_package_and_licence
run_case a_second_build_gives_the_same_manifest_digest a_second_build_gives_the_same_manifest_digest
run_case rootfs_mode_writes_the_layers_files rootfs_mode_writes_the_layers_files
run_case short_names_are_named_as_the_kubelet_looks_them_up short_names_are_named_as_the_kubelet_looks_them_up
run_case containerd_imports_the_archive_under_its_name containerd_imports_the_archive_under_its_name
run_case the_image_runs_its_entrypoint_under_containerd the_image_runs_its_entrypoint_under_containerd
run_case the_operator_in_the_image_takes_its_lease the_operator_in_the_image_takes_its_lease
finish
