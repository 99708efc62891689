#!/usr/bin/env bash
# Runs every Go fuzz target of the module for ${FUZZTIME:-5s} each and prints
# the executions per target. Usage: FUZZTIME=30s scripts/fuzz.sh [package...]
#
# A failing input that Go writes under <package>/testdata/fuzz/<target>/ is
# moved aside into a temporary directory (printed, with its contents) before
# the script fails: left in place, an untracked failing input would make
# every later `go test ./...` in this clone fail. To keep it as a seed, copy
# it back, fix the code, and commit both.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=1
fuzztime=${FUZZTIME:-5s}
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
# set_aside moves the inputs of corpus dir $1 that were not there before
# (names in $2) into a new temporary directory and prints them.
set_aside() {
  local corpus=$1 before=$2 aside f
  [ -d "$corpus" ] || return 0
  aside=""
  for f in $(ls -A "$corpus"); do
    if ! grep -qxF -- "$f" <<<"$before"; then
      [ -n "$aside" ] || aside=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-failing.XXXXXX")
      mv -- "$corpus/$f" "$aside/"
      echo "== failing input $aside/$f (moved out of ${corpus#"$PWD"/}):"
      cat -- "$aside/$f"
    fi
  done
  rmdir "$corpus" 2>/dev/null || true
}

total=0 targets=0
summary=""
while read -r pkg; do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    log=$(mktemp)
    corpus="$dir/testdata/fuzz/$target"
    before=$(ls -A "$corpus" 2>/dev/null || true)
    # -fuzzminimizetime: minimising a new interesting input may otherwise
    # take up to 60 s, during which no input runs and a short -fuzztime ends
    # in "context deadline exceeded" with nothing found.
    fuzz() { go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "${FUZZMINTIME:-1s}" "$pkg" >"$log" 2>&1; }
    if ! fuzz; then
      # Go's fuzzer can stop a worker mid-input at the deadline and report
      # "context deadline exceeded" without any failing input: run again once.
      # A real failure saves its input under testdata/fuzz and fails again.
      if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log" && fuzz; then
        :
      else
        cat "$log"; set_aside "$corpus" "$before"; echo "FAIL: $pkg $target"; exit 1
      fi
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
