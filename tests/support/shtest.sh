# Minimal harness for shell integration tests: each `run_case NAME FUNCTION` is one
# test case; `finish` writes a JUnit report to $XML_OUTPUT_FILE (read by tools/test)
# and exits non-zero if any case failed. Source it; do not execute it.

_sh_cases=()
_sh_results=()
_sh_failures=0

_sh_xml_escape() {
  sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'
}

# run_case NAME FUNCTION [ARGS...]: runs FUNCTION in a subshell with `set -e`; its output
# is kept and shown only when it fails.
run_case() {
  local name=$1
  shift
  local out rc
  # Not in an && or || list: there bash would ignore `set -e` inside the function.
  set +e
  out=$(
    set -euo pipefail
    "$@" 2>&1
  )
  rc=$?
  _sh_cases+=("$name")
  if [ "$rc" -eq 0 ]; then
    _sh_results+=("")
    echo "PASS $name"
  else
    _sh_results+=("${out:-exit status $rc}")
    _sh_failures=$((_sh_failures + 1))
    echo "FAIL $name"
    printf '%s\n' "$out" | sed 's/^/    /'
  fi
}

finish() {
  local total=${#_sh_cases[@]} i
  if [ -n "${XML_OUTPUT_FILE:-}" ]; then
    {
      echo '<?xml version="1.0" encoding="UTF-8"?>'
      echo "<testsuite name=\"$(basename "$0")\" tests=\"$total\" failures=\"$_sh_failures\">"
      for ((i = 0; i < total; i++)); do
        printf '<testcase name="%s">' "$(printf '%s' "${_sh_cases[$i]}" | _sh_xml_escape)"
        if [ -n "${_sh_results[$i]}" ]; then
          printf '<failure message="failed">%s</failure>' "$(printf '%s' "${_sh_results[$i]}" | _sh_xml_escape)"
        fi
        echo '</testcase>'
      done
      echo '</testsuite>'
    } >"$XML_OUTPUT_FILE"
  fi
  echo "$((total - _sh_failures)) of $total cases passed"
  [ "$_sh_failures" -eq 0 ]
}

# expect_fail_with PATTERN COMMAND...: the command must fail and its output must match
# the extended regular expression PATTERN.
expect_fail_with() {
  local pattern=$1
  shift
  local out
  if out=$("$@" 2>&1); then
    echo "expected failure, but it succeeded: $*"
    echo "$out"
    return 1
  fi
  if ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "failed as expected, but the message does not match /$pattern/:"
    echo "$out"
    return 1
  fi
}
