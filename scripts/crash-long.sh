#!/usr/bin/env bash
# The long crash run: the crash harness of cmd/waitroom/crash_test.go with
# CYCLES kill/restart cycles (CI runs 20). A real `waitroom serve` on the
# embedded store runs mixed load (keyed joins into an auto and a manual
# room, leaves, heartbeats, advances, revokes) and is killed with SIGKILL at
# a random moment each cycle; after each restart every acknowledged answer
# is checked against the server. The last line printed is the summary
# (cycles, acknowledged operations per kind, lost, violations, restart time).
#
#   scripts/crash-long.sh                  # 100 cycles
#   CYCLES=500 scripts/crash-long.sh
#   SEED=123 scripts/crash-long.sh         # repeat a run's kill moments
set -euo pipefail
cd "$(dirname "$0")/.."
CYCLES=${CYCLES:-100}
# About a second a cycle here, growing slowly with the rooms' history;
# allow ten times that.
TIMEOUT=${TIMEOUT:-$(( CYCLES * 10 + 120 ))s}
export WAITROOM_CRASH_CYCLES=$CYCLES
if [[ -n "${SEED:-}" ]]; then
	export WAITROOM_CRASH_SEED=$SEED
fi
go test -count=1 -v -timeout "$TIMEOUT" \
	-run '^TestCrashMixedLoadKeepsEveryAcknowledgedOperation$' ./cmd/waitroom/ |
	grep -v '^=== ' | cut -c1-2000
