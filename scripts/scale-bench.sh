#!/usr/bin/env bash
# The large-crowd live-update run (issue 14, "scale shown"): USERS people
# hold event streams on one room, spread over SERVERS `waitroom serve`
# processes that share one local redis-server (one process may hold at most
# 20,000 open files), the crowd in worker processes over 127.0.0.x sources;
# once everyone is in line the room admits ADMITS people a second
# (capacity ADMITS, each stays about a second). It reports what the crowd saw and, over the steady part of the
# run (the whole crowd in), the servers' CPU, Redis's CPU per delivered
# update and the servers' memory per open stream.
#
#   USERS=100000 SERVERS=6 scripts/scale-bench.sh
#   MODE=rate ...   admit ADMITS a second by the room's rate_per_minute, with
#                   4×ADMITS slots, not by slots freed (a saturated machine
#                   slows the people leaving, and so the slot cycle)
set -euo pipefail
cd "$(dirname "$0")/.."
USERS=${USERS:-100000}
SERVERS=${SERVERS:-$(( (USERS + 17999) / 18000 ))}
ADMITS=${ADMITS:-500}
RATE=${RATE:-2000}
HOLD_SECONDS=${HOLD_SECONDS:-30}
WORKERS=${WORKERS:-$(( (USERS + 3999) / 4000 ))}
SOURCES=${SOURCES:-$(( (USERS + 9999) / 10000 + 1 ))}
dir=$(mktemp -d)
pids=()
trap 'kill ${pids[@]} 2>/dev/null || true; if [ -n "${KEEP:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi' EXIT
go build -o "$dir/waitroom" ./cmd/waitroom
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --save '' --appendonly no --maxclients 10000 >"$dir/redis.log" 2>&1 &
rpid=$!
pids+=("$rpid")
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
targets=() spids=()
for i in $(seq "$SERVERS"); do
	"$dir/waitroom" serve --addr 127.0.0.1:0 --data "$dir/d$i" --store "redis://127.0.0.1:$port" --admin-token bench-admin-token-0123 \
		--join-limit 0 >"$dir/s$i.out" 2>"$dir/s$i.err" &
	spids+=($!)
	pids+=($!)
done
for i in $(seq "$SERVERS"); do
	for _ in $(seq 100); do grep -q listening "$dir/s$i.out" 2>/dev/null && break; sleep 0.1; done
	targets+=("http://$(sed -n 's/.*listening on //p' "$dir/s$i.out")")
done
list=$(IFS=,; echo "${targets[*]}")
# The room is paused while the crowd arrives, so that the whole crowd holds
# its streams at once; it opens once everyone is in line.
if [[ ${MODE:-capacity} == rate ]]; then
	# Admissions at a fixed rate, whatever the cycle of people leaving.
	room="{\"capacity\":$(( ADMITS * 4 )),\"rate_per_minute\":$(( ADMITS * 60 )),\"active_timeout\":\"1m\""
else
	room="{\"capacity\":$ADMITS,\"active_timeout\":\"1m\""
fi
curl -sf -X PUT "${targets[0]}/v1/rooms/scale" -H "Authorization: Bearer bench-admin-token-0123" -d "$room,\"paused\":true}" >/dev/null
(
	set +e
	# Open once everyone is in line, or 20 s after the arrivals should
	# have ended (some joins may have failed).
	for _ in $(seq $(( (USERS / RATE + 20) * 2 ))); do
		w=$(curl -sf "${targets[0]}/v1/rooms/scale" -H "Authorization: Bearer bench-admin-token-0123" | python3 -c 'import json, sys; print(json.load(sys.stdin)["waiting"])' 2>/dev/null)
		[[ $w =~ ^[0-9]+$ ]] && (( w >= USERS )) && break
		sleep 0.5
	done
	curl -sf -X PUT "${targets[0]}/v1/rooms/scale" -H "Authorization: Bearer bench-admin-token-0123" -d "$room}" >/dev/null
	date +%s%3N >"$dir/opened"
) &
pids+=($!)
ticks() { local t=0 p; for p in "$@"; do t=$(( t + $(awk '{print $14+$15}' "/proc/$p/stat") )); done; echo $t; }
rss() { local t=0 p; for p in "$@"; do t=$(( t + $(awk '/VmRSS/{print $2}' "/proc/$p/status") )); done; echo $t; }
idle=$(rss "${spids[@]}")
# Sampler: wall ms, servers' CPU ticks, Redis's CPU ticks, servers' RSS (KiB), every second.
( set +e; while kill -0 "$rpid" 2>/dev/null; do
	echo "$(date +%s%3N) $(ticks "${spids[@]}") $(ticks "$rpid") $(rss "${spids[@]}")"; sleep 1
done >"$dir/samples.log" ) &
pids+=($!)
duration=$(( USERS / RATE + HOLD_SECONDS ))
"$dir/waitroom" load --target "$list" --room scale --users "$USERS" --rate "$RATE" --hold 1s \
	--duration "${duration}s" --workers "$WORKERS" --sources "$SOURCES" --admin-token bench-admin-token-0123 \
	--check-every "${CHECK_EVERY:-0s}" --json "$dir/result.json" --chart none 2>"$dir/load.err" | tee "$dir/load.out"
python3 - "$dir/result.json" "$dir/samples.log" "$idle" "$(getconf CLK_TCK)" "$(cat "$dir/opened" 2>/dev/null || echo 0)" <<'PY'
import json, sys, datetime
r = json.load(open(sys.argv[1]))
idle, tick = int(sys.argv[3]), float(sys.argv[4])
def ts(v):
    v = v.rstrip("Z")
    if "." in v:
        a, b = v.split("."); v = a + "." + b[:6]
    return datetime.datetime.fromisoformat(v).replace(tzinfo=datetime.timezone.utc).timestamp()
t0 = ts(r["started"])
ser = [(t0 + s["t"], s.get("updates", 0), s["waiting"] + s["active"]) for s in r["series"]]
smp = []
for l in open(sys.argv[2]):
    f = l.split()
    if len(f) == 4 and all(x.isdigit() for x in f):
        smp.append((int(f[0]) / 1000, int(f[1]), int(f[2]), int(f[3])))
start = max(next(t0 + s["t"] for s in r["series"] if s["joined"] >= r["joined"]), int(sys.argv[5]) / 1000) + 1
end = min(ser[-1][0], smp[-1][0]) - 1
def at(points, t, k):
    prev = points[0]
    for p in points:
        if p[0] >= t:
            if p[0] == prev[0]: return p[k]
            return prev[k] + (p[k] - prev[k]) * (t - prev[0]) / (p[0] - prev[0])
        prev = p
    return points[-1][k]
upd = at(ser, end, 1) - at(ser, start, 1)
scpu = (at(smp, end, 1) - at(smp, start, 1)) / tick
rcpu = (at(smp, end, 2) - at(smp, start, 2)) / tick
peak = max(s[3] for s in smp)
openmax = max(s[2] for s in ser)
sec = end - start
print(f"steady window {sec:.0f}s (whole crowd in, room open): {upd:.0f} updates ({upd / sec:.0f}/s), servers' CPU {scpu:.1f}s ({scpu / sec * 100:.0f}% of one core), "
      f"{scpu / max(upd, 1) * 1e6:.1f} µs per update; Redis CPU {rcpu:.1f}s, {rcpu / max(upd, 1) * 1e6:.1f} µs per update")
print(f"servers' memory: {idle / 1024:.0f} MiB idle, {peak / 1024:.0f} MiB peak, {openmax} sessions open at most: {(peak - idle) / max(openmax, 1):.1f} KiB per open stream")
d = r["admission_delivery_ms"]
print(f"admission delivery, whole run: p50 {d['p50']:.0f} ms, p99 {d['p99']:.0f} ms, max {d['max']:.0f} ms (n {d['n']})")
lat = sorted(p["admit_seen_ms"] - p["admitted_ms"] for p in r.get("people") or []
             if p.get("admitted_ms") and p.get("admit_seen_ms") and start * 1000 <= p["admitted_ms"] <= end * 1000)
if lat:
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]
    print(f"admission delivery, steady window: p50 {q(.5)} ms, p90 {q(.9)} ms, p99 {q(.99)} ms, max {lat[-1]} ms (n {len(lat)})")
for c in r.get("position_checks") or []:
    print(f"position check: {c['wrong']} of {c['compared']} wrong, {c['waiting']} waiting")
print(f"joined {r['joined']} of {r['users']}, admitted {r['admitted']}, tau {r['kendall_tau_distance']}, max active {r['max_active']}/{r['capacity']}, reconnects {r['reconnects']}, lost {r['lost']}")
PY
