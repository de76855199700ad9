#!/usr/bin/env bash
# The live-update fan-out benchmark: USERS people hold event streams on one
# room while it admits ADMITS people a second (capacity ADMITS, each admitted
# person stays about a second). It reports the server's CPU per delivered
# update and memory per open stream, next to what the crowd measured
# (admission delivery percentiles, and position checks: every person's
# latest position compared with the server's line one second after the
# crowd and the room were frozen).
#
# Then it runs the baseline, `waitroom sse-baseline`: a minimal net/http SSE
# server with no store and no logic, sending the same number of streams the
# real run's delivered updates a second, BYTES bytes each (default 330: a
# representative Session JSON, between a waiting session's ~260 bytes and an
# admitted one's with its pass; not measured from the run). It prints the
# baseline's figures and the ratios the goals of issue 14 are stated in.
#
#   scripts/fanout-bench.sh                 # 15,000 people, 500 admissions/s
#   USERS=3000 SECONDS_=20 scripts/fanout-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
USERS=${USERS:-15000}
ADMITS=${ADMITS:-500}
SECONDS_=${SECONDS_:-40}
STORE=${STORE:-memory}
WORKERS=${WORKERS:-$(( (USERS + 3999) / 4000 ))}
BYTES=${BYTES:-330}
dir=$(mktemp -d)
srv= smp=
trap 'kill $srv $smp 2>/dev/null || true; rm -rf "$dir"' EXIT
go build -o "$dir/waitroom" ./cmd/waitroom
"$dir/waitroom" serve --addr 127.0.0.1:0 --data "$dir/data" --store "$STORE" --join-limit 0 >"$dir/serve.out" 2>"$dir/serve.err" &
srv=$!
for _ in $(seq 100); do grep -q listening "$dir/serve.out" 2>/dev/null && break; sleep 0.1; done
addr=$(sed -n 's/.*listening on //p' "$dir/serve.out")
token=$(cat "$dir/data/admin-token")
curl -sf -X PUT "http://$addr/v1/rooms/fanout" -H "Authorization: Bearer $token" \
	-d "{\"capacity\":$ADMITS,\"active_timeout\":\"1m\"}" >/dev/null
cpu() { awk '{print $14+$15}' "/proc/$srv/stat"; }
rss() { awk '/VmRSS/{print $2}' "/proc/$srv/status" 2>/dev/null || true; }
tick=$(getconf CLK_TCK)
rss0=$(rss)
cpu0=$(cpu)
# The peak sampler: the server's RSS every half second, the largest kept in
# $dir/peak. A sample is empty once the server is gone, so anything but a
# number is skipped; the peak is only ever replaced whole (mv), so a reader
# never sees it half written.
echo "$rss0" >"$dir/peak"
(
	set +e
	peak=${rss0:-0}
	while kill -0 "$srv" 2>/dev/null; do
		r=$(rss)
		if [[ $r =~ ^[0-9]+$ ]] && (( r > peak )); then
			peak=$r
			echo "$peak" >"$dir/peak.new" && mv -f "$dir/peak.new" "$dir/peak"
		fi
		sleep 0.5
	done
) &
smp=$!
"$dir/waitroom" load --target "http://$addr" --room fanout --users "$USERS" --rate $((USERS / 5)) \
	--hold 1s --duration "${SECONDS_}s" --workers "$WORKERS" --sources $(( (USERS + 9999) / 10000 + 1 )) \
	--check-every 10s --admin-token "$token" --json "$dir/result.json" 2>"$dir/progress.log"
cpu1=$(cpu)
r=$(rss)
peak=$(cat "$dir/peak")
if [[ $r =~ ^[0-9]+$ ]] && (( r > peak )); then peak=$r; fi
python3 - "$dir/result.json" "$cpu0" "$cpu1" "$tick" "$rss0" "$peak" "$USERS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cpu = (float(sys.argv[3]) - float(sys.argv[2])) / float(sys.argv[4])
rss0, peak, users = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
upd = r["updates_received"]
print(f"server CPU {cpu:.1f}s for {upd} delivered updates: {cpu / max(upd, 1) * 1e6:.1f} µs per update")
print(f"server memory: {rss0/1024:.0f} MiB idle, {peak/1024:.0f} MiB peak with {users} streams: {(peak - rss0) / users:.1f} KiB per stream")
d = r["admission_delivery_ms"]
print(f"admission delivery: p50 {d['p50']:.0f} ms, p99 {d['p99']:.0f} ms, max {d['max']:.0f} ms (n {d['n']})")
for c in r.get("position_checks") or []:
    print(f"position check: {c['wrong']} of {c['compared']} wrong, {c['waiting']} waiting")
print(f"admitted {r['admitted']}, tau {r['kendall_tau_distance']}, max active {r['max_active']}/{r['capacity']}, reconnects {r['reconnects']}, lost {r['lost']}")
PY

# The baseline, on a quiet machine: the real server is done.
kill "$smp" "$srv" 2>/dev/null || true
wait "$smp" "$srv" 2>/dev/null || true
srv= smp=
rate=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(max(1, round(r["updates_received"] / float(sys.argv[2]))))' "$dir/result.json" "$SECONDS_")
if (( USERS > 19500 )); then
	echo "baseline: skipped, one process holds at most 19,500 streams"
	exit 0
fi
"$dir/waitroom" sse-baseline --streams "$USERS" --rate "$rate" --bytes "$BYTES" --duration "${SECONDS_}s" \
	--json "$dir/baseline.json" >"$dir/baseline.out"
python3 - "$dir/result.json" "$cpu0" "$cpu1" "$tick" "$rss0" "$peak" "$USERS" "$dir/baseline.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[8]))
cpu = (float(sys.argv[3]) - float(sys.argv[2])) / float(sys.argv[4])
rss0, peak, users = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
us = cpu / max(r["updates_received"], 1) * 1e6
kib = (peak - rss0) / users
print(f"baseline (net/http SSE, no store, no logic): {b['streams']} streams, {b['delivered']} messages of {b['bytes']} bytes "
      f"({b['delivered'] / b['seconds']:.0f}/s): server CPU {b['cpu_seconds']:.2f}s, {b['cpu_us_per_update']:.1f} µs per update; "
      f"{b['kib_per_stream']:.1f} KiB per stream")
ratio = us / b["cpu_us_per_update"] if b["cpu_us_per_update"] > 0 else float("inf")
print(f"CPU per delivered update: {us:.1f} µs real, {b['cpu_us_per_update']:.1f} µs baseline: {ratio:.2f}× (goal ≤ 1.25×)")
print(f"memory per open stream: {kib:.1f} KiB real (goal ≤ 16 KiB), {b['kib_per_stream']:.1f} KiB baseline")
PY
