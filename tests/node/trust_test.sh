#!/usr/bin/env bash
# tests/node/trust_test.sh: a kubeconfig's certificate authority is the only one the
# client trusts. Debian's libcurl loads its built-in CA directory (/etc/ssl/certs) beside
# a CA given as a blob unless told not to; then any certificate a public CA issued for the
# server's name would pass, and the token would go to whoever holds it.
#
# A TLS server (openssl s_server) presents a certificate for localhost issued by CA
# "public"; in a mount namespace of its own, /etc/ssl/certs holds only that CA (hashed as
# OpenSSL looks it up). kubectl-partitioning, given a kubeconfig naming CA "cluster", must
# refuse the server; given "public", it must get past TLS (the control case).
# Needs root (unshare -m), openssl and bazel-bin/cli/kubectl-partitioning (tools/test
# builds //...). Run by tools/test; its last line is "N of N cases passed".
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=tests/support/shtest.sh
source tests/support/shtest.sh

cli=$root/bazel-bin/cli/kubectl-partitioning
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

make_ca() { # make_ca NAME
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1 CA" \
    -keyout "$work/$1.key" -out "$work/$1.crt" 2>/dev/null
}

kubeconfig_with_ca() { # kubeconfig_with_ca CA PORT
  cat >"$work/kubeconfig-$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: k
  cluster:
    server: https://localhost:$2
    certificate-authority-data: $(base64 -w0 "$work/$1.crt")
users:
- name: u
  user: {token: not-for-strangers}
contexts:
- name: c
  context: {cluster: k, user: u}
current-context: c
EOF
}

# The CLI's answer with only CA "public" in the system's CA directory.
list_with_system_ca_public() { # list_with_system_ca_public KUBECONFIG
  unshare -m bash -c 'mount --bind "$1" /etc/ssl/certs && "$2" --kubeconfig "$3" list 2>&1' \
    _ "$work/system-certs" "$cli" "$1"
}

# Not in run_case (a subshell): the server's pid and port are needed after.
setup() {
  [ "$(id -u)" = 0 ] || { echo "needs root (unshare -m)"; return 1; }
  [ -x "$cli" ] || { echo "no $cli (bazel build //cli:kubectl-partitioning)"; return 1; }
  make_ca public && make_ca cluster || return 1
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost\n' >"$work/ext"
  openssl x509 -req -in "$work/server.csr" -CA "$work/public.crt" -CAkey "$work/public.key" \
    -CAcreateserial -days 2 -extfile "$work/ext" -out "$work/server.crt" 2>/dev/null
  mkdir "$work/system-certs"
  cp "$work/public.crt" "$work/system-certs/"
  openssl rehash "$work/system-certs" || return 1
  # A free port: the kernel's pick for a socket just closed.
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  openssl s_server -quiet -accept "127.0.0.1:$port" -cert "$work/server.crt" \
    -key "$work/server.key" -www >"$work/server.log" 2>&1 &
  server_pid=$!
  local up=0
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      up=1
      break
    fi
    sleep 0.1
  done
  [ "$up" = 1 ] || { echo "openssl s_server did not listen:"; cat "$work/server.log"; return 1; }
  kubeconfig_with_ca cluster "$port"
  kubeconfig_with_ca public "$port"
}

a_publicly_trusted_certificate_is_refused() {
  local out
  out=$(list_with_system_ca_public "$work/kubeconfig-cluster") || true
  echo "$out"
  grep -q "SSL certificate problem" <<<"$out"
}

the_kubeconfigs_own_ca_is_trusted() {
  local out
  out=$(list_with_system_ca_public "$work/kubeconfig-public") || true
  echo "$out"
  # Past TLS: s_server answers with a page that is no API answer.
  ! grep -q "SSL\|TLS" <<<"$out" && grep -q "not JSON" <<<"$out"
}

setup >"$work/setup.log" 2>&1
setup_rc=$?
run_case setup eval 'cat "$work/setup.log"; exit $setup_rc'
run_case a_publicly_trusted_certificate_is_refused a_publicly_trusted_certificate_is_refused
run_case the_kubeconfigs_own_ca_is_trusted the_kubeconfigs_own_ca_is_trusted
finish
