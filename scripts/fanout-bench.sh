#!/usr/bin/env bash
# The live-update fan-out benchmark: USERS people hold event streams on one
# room while it admits ADMITS people a second (capacity ADMITS, each admitted
# person stays about a second). It reports the server's CPU per delivered
# update and memory per open stream, next to what the crowd measured
# (admission delivery percentiles, and position checks: every person's
# latest position compared with the server's line SETTLE (7s: the server's
# --push-refresh and some) after the crowd and the room were frozen), and a
# steady-state figure: CPU per update while the whole crowd is in and no
# check runs.
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
#   SERVE_BIN=/tmp/old-waitroom scripts/fanout-bench.sh   # another server build
#   CHECK_EVERY=20s SETTLE=7s                              # the freeze checks
set -euo pipefail
cd "$(dirname "$0")/.."
USERS=${USERS:-15000}
ADMITS=${ADMITS:-500}
SECONDS_=${SECONDS_:-40}
STORE=${STORE:-memory}
WORKERS=${WORKERS:-$(( (USERS + 3999) / 4000 ))}
BYTES=${BYTES:-330}
dir=$(mktemp -d)
srv= smp= csmp=
trap 'kill $srv $smp $csmp 2>/dev/null || true; rm -rf "$dir"' EXIT
go build -o "$dir/waitroom" ./cmd/waitroom
"${SERVE_BIN:-$dir/waitroom}" serve --addr 127.0.0.1:0 --data "$dir/data" --store "$STORE" --join-limit 0 >"$dir/serve.out" 2>"$dir/serve.err" &
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
# The CPU sampler: wall time (ms) and the server's CPU ticks, every 200ms,
# for the steady-state figure (the crowd all in, no check running).
( set +e; while kill -0 "$srv" 2>/dev/null; do echo "$(date +%s%3N) $(cpu 2>/dev/null)"; sleep 0.2; done >"$dir/cpu.log" ) &
csmp=$!
"$dir/waitroom" load --target "http://$addr" --room fanout --users "$USERS" --rate $((USERS / 5)) \
	--hold 1s --duration "${SECONDS_}s" --workers "$WORKERS" --sources $(( (USERS + 9999) / 10000 + 1 )) \
	--check-every "${CHECK_EVERY:-10s}" --check-settle "${SETTLE:-7s}" --admin-token "$token" --json "$dir/result.json" 2>"$dir/progress.log"
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
# Steady state: CPU and updates only while the whole crowd is in and no
# check is freezing it (from a second after the last join, leaving out
# each check's freeze and settle, and a second around it).
python3 - "$dir/result.json" "$dir/cpu.log" "$tick" "${SETTLE:-7s}" >"$dir/steady.txt" <<'PY'
import json, sys, datetime
r = json.load(open(sys.argv[1]))
tick = float(sys.argv[3])
settle = float(sys.argv[4].rstrip("s"))
def ts(v):
    v = v.rstrip("Z")
    if "." in v:
        a, b = v.split(".")
        v = a + "." + b[:6]
    return datetime.datetime.fromisoformat(v).replace(tzinfo=datetime.timezone.utc).timestamp()
t0 = ts(r["started"])
users = r["users"] if isinstance(r["users"], int) else r["joined"]
ser = [(t0 + s["t"], s.get("updates", 0)) for s in r["series"]]
cpu = []
for l in open(sys.argv[2]):
    f = l.split()
    if len(f) == 2 and f[1].replace(".", "").isdigit():
        cpu.append((int(f[0]) / 1000, float(f[1])))
start = next((t0 + s["t"] for s in r["series"] if s["joined"] >= r["joined"]), None)
if start is None or not cpu or not ser:
    print("steady: no window"); sys.exit(0)
start += 1.0
end = min(ser[-1][0], cpu[-1][0]) - 1.5
bad = [(ts(c["at"]) - settle - 2.5, ts(c["at"]) + 1.5) for c in r.get("position_checks") or []]
def at(points, t):
    prev = points[0]
    for p in points:
        if p[0] >= t:
            if p[0] == prev[0]:
                return p[1]
            return prev[1] + (p[1] - prev[1]) * (t - prev[0]) / (p[0] - prev[0])
        prev = p
    return points[-1][1]
# cut [start, end] by the check windows
win, t = [], start
for a, b in sorted(bad):
    if b <= t: continue
    if a > t: win.append((t, min(a, end)))
    t = max(t, b)
    if t >= end: break
if t < end: win.append((t, end))
win = [(a, b) for a, b in win if b - a >= 1]
sec = sum(b - a for a, b in win)
c = sum(at(cpu, b) - at(cpu, a) for a, b in win) / tick
u = sum(at(ser, b) - at(ser, a) for a, b in win)
if u <= 0:
    print("steady: no updates in the window"); sys.exit(0)
print(f"{c / u * 1e6:.2f} {u:.0f} {sec:.1f} {c:.2f}")
PY
if read -r steady_us steady_upd steady_sec steady_cpu <"$dir/steady.txt" && [[ $steady_us != steady: ]]; then
	echo "steady state (crowd in, no check): ${steady_cpu}s server CPU for ${steady_upd} updates in ${steady_sec}s: ${steady_us} µs per update, $(python3 -c "print(round($steady_upd / $steady_sec))") updates/s"
else
	cat "$dir/steady.txt"
	steady_us=
fi

# The baseline, on a quiet machine: the real server is done.
kill "$smp" "$csmp" "$srv" 2>/dev/null || true
wait "$smp" "$csmp" "$srv" 2>/dev/null || true
srv= smp= csmp=
rate=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(max(1, round(r["updates_received"] / float(sys.argv[2]))))' "$dir/result.json" "$SECONDS_")
if (( USERS > 19500 )); then
	echo "baseline: skipped, one process holds at most 19,500 streams"
	exit 0
fi
"$dir/waitroom" sse-baseline --streams "$USERS" --rate "$rate" --bytes "$BYTES" --duration "${SECONDS_}s" \
	--json "$dir/baseline.json" >"$dir/baseline.out"
python3 - "$dir/result.json" "$cpu0" "$cpu1" "$tick" "$rss0" "$peak" "$USERS" "$dir/baseline.json" "${steady_us:-}" <<'PY'
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
print(f"CPU per delivered update: {us:.1f} µs real, {b['cpu_us_per_update']:.1f} µs baseline: {ratio:.2f}× (whole run: joins, leaves, checks and all)")
if sys.argv[9]:
    st = float(sys.argv[9])
    print(f"CPU per delivered update, steady state: {st:.1f} µs real, {b['cpu_us_per_update']:.1f} µs baseline: {st / b['cpu_us_per_update']:.2f}× (goal ≤ 1.25×)")
print(f"memory per open stream: {kib:.1f} KiB real (goal ≤ 16 KiB), {b['kib_per_stream']:.1f} KiB baseline")
PY
