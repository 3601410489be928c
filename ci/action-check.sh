#!/usr/bin/env bash
# The check step of action.yml (kept in a file so tests run it as the action does).
#
# In:  DPMLENS_BASE (revision to diff against), DPMLENS_PATHS (pathspecs), DPMLENS_FAIL_LEVEL,
#      DPMLENS_INTRODUCED_ONLY ("true", the default, / "false"; DPMLENS_CHANGED_LINES_ONLY=true,
#      its old name, turns it on too), DPMLENS_ARGS, DPMLENS (the command,
#      default dpmlens), RUNNER_TEMP, GITHUB_OUTPUT.
# Out: annotations on stdout (workflow commands); `sarif`, `files` and `status` (dpmlens's exit
#      code, 0 when nothing reached the fail level) in $GITHUB_OUTPUT. The step itself fails
#      only on errors, so the SARIF upload after it always runs.
set -euo pipefail

dpmlens=${DPMLENS:-dpmlens}
out=${RUNNER_TEMP:-$(mktemp -d)}/dpmlens.sarif
base=${DPMLENS_BASE:-}
# A first push has no previous commit (github.event.before is all zeros).
if [[ -z "$base" || "$base" =~ ^0+$ ]] || ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "::warning title=dpmlens::no base revision to diff against (${base:-none}); checking every C file"
  base=""
fi
# Compare with where the branch left its base (as GitHub's pull request diff does), so what
# the base branch gained since is not taken for the change.
if [[ -n "$base" ]]; then
  base=$(git merge-base "$base" HEAD 2>/dev/null || echo "$base")
fi

# shellcheck disable=SC2206  # pathspecs are space-separated on purpose
specs=(${DPMLENS_PATHS:-.})
files=()
if [[ -n "$base" ]]; then
  while IFS= read -r -d '' f; do
    case "$f" in *.c|*.h) [[ -f "$f" ]] && files+=("$f") ;; esac
  done < <(git diff -z --name-only --diff-filter=ACMR "$base" HEAD -- "${specs[@]}")
else
  while IFS= read -r -d '' f; do
    case "$f" in *.c|*.h) files+=("$f") ;; esac
  done < <(git ls-files -z -- "${specs[@]}")
fi

echo "sarif=$out" >> "${GITHUB_OUTPUT:-/dev/null}"
echo "files=${#files[@]}" >> "${GITHUB_OUTPUT:-/dev/null}"
# shellcheck disable=SC2206
extra=(${DPMLENS_ARGS:-})
# Introduced only (the default): `--diff BASE` keeps a finding absent at BASE (rule + function +
# message) whose lines or call chain the change touches, as `--commits` and the pre-commit hook.
if [[ ( "${DPMLENS_INTRODUCED_ONLY:-true}" != "false" || "${DPMLENS_CHANGED_LINES_ONLY:-false}" == "true" ) && -n "$base" ]]; then
  extra+=(--diff "$base")
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "dpmlens: no changed C files"
  empty=$(mktemp -d)
  "$dpmlens" check -q --format sarif --output "$out" "$empty"
  echo "status=0" >> "${GITHUB_OUTPUT:-/dev/null}"
  exit 0
fi
echo "dpmlens: checking ${#files[@]} changed C file(s) against ${base:-nothing}"
# The SARIF for code scanning, then annotations and the verdict (the result cache answers the
# second run).
status=0
"$dpmlens" check "${extra[@]}" --fail-level none --format sarif --output "$out" "${files[@]}" || status=$?
if [[ $status -ne 0 ]]; then
  echo "status=$status" >> "${GITHUB_OUTPUT:-/dev/null}"
  exit "$status"
fi
"$dpmlens" check "${extra[@]}" --fail-level "${DPMLENS_FAIL_LEVEL:-warning}" --format github "${files[@]}" || status=$?
echo "status=$status" >> "${GITHUB_OUTPUT:-/dev/null}"
[[ $status -le 1 ]] || exit "$status"
