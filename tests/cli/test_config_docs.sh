#!/usr/bin/env bash
# test_config_docs.sh - docs/configuration.md must be exactly what
# `cdcflow config docs` prints, so it is never edited by hand and never
# stale. Fix a failure with `make docs` (or
# `build/cdcflow config docs > docs/configuration.md`) and commit the result.
set -uo pipefail
CLI=${CF_CLI:?CF_CLI must point to the cdcflow binary}
ROOT=$(cd "${CF_TESTS_DIR:?}/.." && pwd)
DOC=$ROOT/docs/configuration.md
[[ -f $DOC ]] || { echo "FAIL: $DOC is missing; generate it with: cdcflow config docs > docs/configuration.md"; exit 1; }
gen=$(mktemp)
trap 'rm -f "$gen"' EXIT
"$CLI" config docs > "$gen" || { echo "FAIL: cdcflow config docs exited $?"; exit 1; }
if ! diff -u "$DOC" "$gen"; then
  echo "FAIL: docs/configuration.md differs from \`cdcflow config docs\` (diff above: - committed, + generated)."
  echo "Regenerate it with \`make docs\` and commit it; do not edit it by hand."
  exit 1
fi
echo "docs/configuration.md is current"
