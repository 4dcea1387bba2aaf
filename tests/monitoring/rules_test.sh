#!/usr/bin/env bash
# The alert rules with Debian's promtool: the file is valid, each alert's unit tests
# (rules_test.yaml: synthetic series, firing and not firing) pass, and no alert is left
# without one.
set -uo pipefail
source tests/support/shtest.sh

rules=helm/gpu-partitioner/files/prometheus-rules.yaml
unit=tests/monitoring/rules_test.yaml

rules_file_is_valid() {
  promtool check rules "$rules"
}

alerts_fire_and_stay_quiet_as_their_unit_tests_say() {
  promtool test rules "$unit"
}

every_alert_has_a_unit_test() {
  local alerts missing=0
  alerts=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$rules")
  [ -n "$alerts" ] || { echo "no alert found in $rules"; return 1; }
  for a in $alerts; do
    # A test that expects it to fire, not only one that expects silence.
    if ! awk -v a="$a" '$0 ~ "alertname: " a "$" { getline; if ($0 ~ /exp_alerts: *$/) found = 1 }
        END { exit !found }' "$unit"; then
      echo "no unit test in $unit expects $a to fire"
      missing=1
    fi
  done
  return "$missing"
}

run_case rules_file_is_valid rules_file_is_valid
run_case alerts_fire_and_stay_quiet_as_their_unit_tests_say alerts_fire_and_stay_quiet_as_their_unit_tests_say
run_case every_alert_has_a_unit_test every_alert_has_a_unit_test
finish
