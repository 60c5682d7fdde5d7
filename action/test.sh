#!/usr/bin/env bash
# Runs `mutatis test` for the action (action.yml, docs/ci.md): JUnit XML
# into MUTATIS_JUNIT, a job summary into GITHUB_STEP_SUMMARY, and the exit
# status of mutatis test (0 passed, 1 failed cases, 2 bad input).
#
#   MUTATIS_PATHS  suites and directories, space-separated (default .)
#   MUTATIS_ARGS   more flags of mutatis test, space-separated
#   MUTATIS_JUNIT  the JUnit file (default mutatis-junit.xml)
#   MUTATIS        the binary (default: mutatis on PATH)
set -uo pipefail

mutatis=${MUTATIS:-mutatis}
junit=${MUTATIS_JUNIT:-mutatis-junit.xml}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
read -r -a paths <<< "${MUTATIS_PATHS:-.}"
read -r -a args <<< "${MUTATIS_ARGS:-}"

"$mutatis" test -o junit "${args[@]}" "${paths[@]}" > "$junit"
rc=$?

# attr NAME: the attribute of the JUnit report's <testsuites> element.
attr() { grep -o "<testsuites [^>]*" "$junit" | grep -o " $1=\"[0-9]*\"" | head -1 | tr -dc 0-9; }
{
  echo "### mutatis test"
  echo
  case $rc in
    0) echo "Passed: $(attr tests) cases in ${paths[*]}." ;;
    1) echo "**Failed**: $(attr failures) failures and $(attr errors) errors of $(attr tests) cases in ${paths[*]}." ;;
    *) echo "**Could not run** (exit $rc): see the log." ;;
  esac
  echo
  echo "JUnit report: \`$junit\`"
} >> "$summary"
if [ $rc -ne 0 ]; then
  # The failures as people read them, in the log and the summary.
  out=$("$mutatis" test "${args[@]}" "${paths[@]}" 2>&1)
  echo "$out"
  { echo; echo '```text'; echo "$out"; echo '```'; } >> "$summary"
fi
exit $rc
