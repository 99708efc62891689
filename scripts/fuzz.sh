#!/usr/bin/env bash
# Runs every Go fuzz target of the module for ${FUZZTIME:-5s} each and prints
# the executions per target. Usage: FUZZTIME=30s scripts/fuzz.sh [package...]
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=1
fuzztime=${FUZZTIME:-5s}
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
total=0 targets=0
summary=""
while read -r pkg; do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    log=$(mktemp)
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >"$log" 2>&1; then
      cat "$log"; echo "FAIL: $pkg $target (a failing input is saved under testdata/fuzz/$target)"; exit 1
    fi
    execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
    rm -f "$log"
    summary+=$(printf '%-55s %-28s %10s execs\n' "$pkg" "$target" "$execs")$'\n'
    total=$((total + execs)); targets=$((targets + 1))
  done
done < <(go list "${pkgs[@]}")
echo "== fuzz figures (${fuzztime} each)"
printf '%s' "$summary"
echo "fuzz: ${targets} targets, ${total} executions, 0 failures"
