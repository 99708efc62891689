#!/usr/bin/env bash
# Crash-safety campaign: runs `contentpipe run` against the loopback
# simulators and SIGKILLs it at random points N times (default 50, up to
# 1000), for the markdown and the webhook publisher, then reruns to
# completion and checks: no lost job, no double publication (files, webhook
# deliveries per Idempotency-Key), PRAGMA integrity_check ok after every kill,
# every attempt recorded or cut by a kill. Usage: scripts/killtest.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=1
n=${1:-50}
log=$(mktemp)
status=0
CONTENTPIPE_KILLS=$n go test -run 'TestCrashKillAndRerun' -count=1 -timeout 60m -v ./cmd/contentpipe >"$log" 2>&1 || status=$?
if [ $status -ne 0 ]; then cat "$log"; fi
echo "== kill test figures (N=$n per publisher)"
grep -o 'FIGURES .*' "$log" || true
grep -E '^(--- |ok|FAIL|PASS)' "$log" || true
rm -f "$log"
exit $status
