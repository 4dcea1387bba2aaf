#!/usr/bin/env bash
# tests/node/operator_audit.py on audit logs written here: a checker that passed
# everything would let helm_pod_test pass with two leaders acting.
set -uo pipefail
source tests/support/shtest.sh

audit=tests/node/operator_audit.py
user=system:serviceaccount:ns:sa
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# log NAME ENTRY...: an audit log of the account's requests, one ENTRY each:
# SECONDS:VERB:RESOURCE:POD:IP[:CODE]: SECONDS is when it was received, or RECEIVED-DONE
# (else it took 0.1 s); RESOURCE "leases" is the coordination.k8s.io Lease; a POD of
# NAME+JTI=no has no bound token's credential id.
log() {
  local name=$1
  shift
  python3 - "$work/$name.log" "$user" "$@" <<'EOF'
import json, sys
out, user, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(out, "w") as f:
    for i, spec in enumerate(specs):
        seconds, verb, resource, pod, ip, *code = spec.split(":")
        received, _, done = seconds.partition("-")
        received = float(received)
        done = float(done) if done else received + 0.1
        extra = {"authentication.kubernetes.io/pod-name": [pod.split("+")[0]]}
        if not pod.endswith("+JTI=no"):
            extra["authentication.kubernetes.io/credential-id"] = ["JTI=%d" % i]
        stamp = lambda t: "2026-01-01T00:00:%02d.%06dZ" % (int(t), round(t % 1 * 1e6))
        f.write(json.dumps({
            "auditID": str(i), "verb": verb, "sourceIPs": [ip],
            "user": {"username": user, "extra": extra},
            "objectRef": {"resource": resource, "name": "x",
                          "apiGroup": "coordination.k8s.io" if resource == "leases" else ""},
            "responseStatus": {"code": int(code[0]) if code else 200},
            "requestReceivedTimestamp": stamp(received),
            "stageTimestamp": stamp(done)}) + "\n")
EOF
}

passes() { python3 "$audit" "$1" "$work/$2.log" "$user" "${@:3}"; }
fails() { # fails PATTERN MODE LOG ARGS...
  expect_fail_with "$1" python3 "$audit" "$2" "$work/$3.log" "$user" "${@:4}"
}

handover_passes() {
  log handover 1:create:leases:a:10.0.0.1:201 2:patch:nodes:a:10.0.0.1 3:update:leases:a:10.0.0.1 \
    4:get:leases:b:10.0.0.2 5:update:leases:b:10.0.0.2 6:patch:nodes:b:10.0.0.2 7:create:events:b:10.0.0.2
  passes writers handover
}

write_after_losing_the_lease_fails() {
  log lost 1:create:leases:a:10.0.0.1:201 2:patch:nodes:a:10.0.0.1 5:update:leases:b:10.0.0.2 \
    6:patch:nodes:b:10.0.0.2 7:patch:nodepartitionings:a:10.0.0.1
  fails 'written while b@10.0.0.2 held the Lease: .* patch nodepartitionings' writers lost
}

# The old leader's write still running when the new one writes.
overlapping_writes_fail() {
  log overlap 1:create:leases:a:10.0.0.1:201 4-6.5:patch:nodes:a:10.0.0.1 4.5:update:leases:b:10.0.0.2 \
    5:patch:nodes:b:10.0.0.2
  fails 'b@10.0.0.2 wrote from .* while a write of a@10.0.0.1 ran until .*06.5' writers overlap
}

lease_taken_back_passes() {
  log back 1:create:leases:a:10.0.0.1:201 2:patch:nodes:a:10.0.0.1 4:update:leases:b:10.0.0.2 \
    5:patch:nodes:b:10.0.0.2 6:update:leases:a:10.0.0.1 7:patch:nodes:a:10.0.0.1
  passes writers back
}

holders_other_address_fails() {
  log address 1:create:leases:a:10.0.0.1:201 2:patch:nodes:a:10.0.0.9
  fails 'written while a@10.0.0.1 held' writers address
}

write_before_any_lease_fails() {
  log early 1:patch:nodes:a:10.0.0.1 2:create:leases:a:10.0.0.1:201
  fails 'written while None held' writers early
}

conflicting_lease_update_takes_nothing() {
  log conflict 1:create:leases:a:10.0.0.1:201 2:update:leases:b:10.0.0.2:409 3:patch:nodes:b:10.0.0.2
  fails 'written while a@10.0.0.1 held' writers conflict
}

self_reviews_and_reads_are_not_acting() {
  log reviews 1:create:selfsubjectaccessreviews:b:10.0.0.2 2:create:leases:a:10.0.0.1:201 \
    3:list:nodes:b:10.0.0.2 4:patch:nodes:a:10.0.0.1
  passes writers reviews
}

window_bounds_the_writes() {
  log window 1:create:leases:a:10.0.0.1:201 2:patch:nodes:b:10.0.0.2 5:patch:nodes:a:10.0.0.1
  passes writers window --from 2026-01-01T00:00:04.000000Z
  fails 'written while a@10.0.0.1 held' writers window
}

identity_wants_each_pods_address_and_bound_token() {
  log identity 1:get:leases:a:10.0.0.1 2:get:leases:b:10.0.0.2
  passes identity identity a=10.0.0.1 b=10.0.0.2
  fails "not from b's IP 10.0.0.3" identity identity a=10.0.0.1 b=10.0.0.3
  fails 'from no pod of the release' identity identity a=10.0.0.1
  fails 'no request from c' identity identity a=10.0.0.1 b=10.0.0.2 c=10.0.0.3
  log unbound 1:get:leases:a+JTI=no:10.0.0.1
  fails 'not with a bound token' identity unbound a=10.0.0.1
}

refused_finds_403() {
  log refused 1:get:leases:a:10.0.0.1 3:list:pods:a:10.0.0.1:403
  fails 'refused: .* list pods' refused refused
  passes refused refused --to 2026-01-01T00:00:02.000000Z
}

run_case handover_passes handover_passes
run_case write_after_losing_the_lease_fails write_after_losing_the_lease_fails
run_case overlapping_writes_fail overlapping_writes_fail
run_case lease_taken_back_passes lease_taken_back_passes
run_case holders_other_address_fails holders_other_address_fails
run_case write_before_any_lease_fails write_before_any_lease_fails
run_case conflicting_lease_update_takes_nothing conflicting_lease_update_takes_nothing
run_case self_reviews_and_reads_are_not_acting self_reviews_and_reads_are_not_acting
run_case window_bounds_the_writes window_bounds_the_writes
run_case identity_wants_each_pods_address_and_bound_token identity_wants_each_pods_address_and_bound_token
run_case refused_finds_403 refused_finds_403
finish
