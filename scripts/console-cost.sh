#!/usr/bin/env bash
# What one open operator console costs the server (issue 13: "one open
# console costs ≤ 1% of one core at 1,000 admissions per second").
#
# It starts `waitroom serve` (embedded SQLite store in a temp dir, loopback
# only, all of it removed at the end), creates room "cost" (capacity
# CAPACITY, default 3 × ADMITS so that nobody waits even when the busy
# machine delays the crowd by a second or two; active_timeout 10s)
# and plays a `waitroom load` crowd that arrives at ADMITS (1,000) people a
# second, each staying admitted about HOLD (1s, drawn from 0.5 to 1.5 s) and
# then leaving: about ADMITS admissions a second.
#
# Under that load it measures the server's CPU (utime+stime of its pid from
# /proc/<pid>/stat, in cores: CPU seconds per second) in ROUNDS (3) rounds of
# three WINDOW-second (15) windows: no console, 1 console, MANY (10)
# consoles, the order rotating from round to round, and the admissions each
# window achieved (the room's `admissions` count from GET /v1/rooms). The
# cost per console is (with − none) ÷ consoles, per round; it prints each
# round's, the median and the spread, raw and with the no-console window
# scaled to the same admissions rate.
#
# Then, with the crowd gone (the same room and hour of stats), on a quiet
# server: QUIET (30) seconds each with no console, 1, MANY, and none again,
# which measures the consoles' own work with little noise.
#
# The server runs with WAITROOM_CPUPROFILE (serve's profiling aid); at the
# end the script sums the profile's samples in the console's handlers (every
# admin route, authorization included, and the sign-in): divided by the
# console-seconds of the loaded windows, an upper bound of a console's own
# CPU under load, free of the machine's noise (GC's share added in a second
# figure). It needs `go` (for the build and `go tool pprof`), curl, python3.
#
# "A console" is what the open room view of internal/console/assets/room.js asks for,
# replayed by a small Go client (written and built in the temp dir, standard
# library only): sign in (POST /admin/api/session, cookie), the view's opening
# requests (GET /v1/rooms, /v1/rooms/{room}/stats, /v1/rooms/{room}/audit?limit=50,
# /v1/stats), then the live stream GET /v1/rooms/{room}/admin-events held open
# (reconnecting 3 s after it ends), GET /v1/stats every 10 s and after every
# "room" event (room.js: setRoom → loadState; a room that admits changes
# between any two ticks of the stream, so under load that is every tick).
# Every event's data is parsed as JSON; a "deleted" event ends it. Each
# console has its own cookie and connections (HTTP/1.1 keep-alive, like a
# browser tab). The opening requests fall in a SETTLE (2 s) gap before each
# measured window: the figure is the cost of a console left open.
#
# A round is left out when any of its windows' admissions are unknown (the
# server did not answer GET /v1/rooms) or under 90% of ADMITS: on a shared
# machine the server can fall behind, with or without a console.
#
#   bash scripts/console-cost.sh                     # about 5½ minutes
#   ADMITS=500 ROUNDS=5 WINDOW=20 bash scripts/console-cost.sh
#   MANY=20 QUIET=20 bash scripts/console-cost.sh
#   SERVE_BIN=/tmp/old-waitroom bash scripts/console-cost.sh   # another server build
set -euo pipefail
cd "$(dirname "$0")/.."
ADMITS=${ADMITS:-1000}
CAPACITY=${CAPACITY:-$(( ADMITS * 3 ))}
HOLD=${HOLD:-1s}
ROUNDS=${ROUNDS:-3}
WINDOW=${WINDOW:-15}
WARMUP=${WARMUP:-10}
SETTLE=${SETTLE:-2}
QUIET=${QUIET:-30}
MANY=${MANY:-10}
WORKERS=${WORKERS:-2}
SOURCES=${SOURCES:-4}
ROOM=cost

dir=$(mktemp -d)
srv= load= con=
cleanup() {
	for p in $con $load $srv; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go build -o "$dir/waitroom" ./cmd/waitroom

# The console client.
mkdir "$dir/consolecli"
cat >"$dir/consolecli/go.mod" <<'EOF'
module consolecli

go 1.22
EOF
cat >"$dir/consolecli/main.go" <<'EOF'
// consolecli opens N operator consoles on one room, as internal/console/assets/room.js's
// room view does, until SIGTERM; then prints what they received and asked.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	stats, rooms, audits, overviews, opens, errs atomic.Int64
)

type console struct {
	base, room string
	c          *http.Client
}

func (k *console) get(ctx context.Context, path string) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", k.base+path, nil)
	req.Header.Set("Accept", "application/json")
	res, err := k.c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", path, res.Status)
	}
	return nil
}

// loadState: GET /v1/stats (the badge), in the background, as often as
// asked (room.js does not hold one back while another is out).
func (k *console) loadState(ctx context.Context) {
	go func() {
		if err := k.get(ctx, "/v1/stats"); err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
			}
			return
		}
		overviews.Add(1)
	}()
}

func (k *console) run(ctx context.Context, token string) error {
	body, _ := json.Marshal(map[string]string{"token": token})
	req, _ := http.NewRequestWithContext(ctx, "POST", k.base+"/admin/api/session", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := k.c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("sign-in: %s", res.Status)
	}
	r := "/v1/rooms/" + k.room
	// openRoom: four requests at once, then the stream.
	var wg sync.WaitGroup
	for _, p := range []string{"/v1/rooms", r + "/stats", r + "/audit?limit=50", "/v1/stats"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.get(ctx, p); err != nil {
				errs.Add(1)
			}
		}()
	}
	wg.Wait()
	opens.Add(1)
	go func() { // setInterval(loadState, 10000)
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				k.loadState(ctx)
			}
		}
	}()
	for ctx.Err() == nil {
		if k.stream(ctx, r+"/admin-events") {
			return nil // "deleted": room.js stops
		}
		select { // EventSource error: retry in 3 s
		case <-ctx.Done():
		case <-time.After(3 * time.Second):
		}
	}
	return nil
}

// stream holds the live stream until it ends; it reports whether the
// server said the room was deleted.
func (k *console) stream(ctx context.Context, path string) (deleted bool) {
	req, _ := http.NewRequestWithContext(ctx, "GET", k.base+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	res, err := k.c.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			errs.Add(1)
		}
		return false
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		errs.Add(1)
		return false
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			var v any // the page parses every event
			if json.Unmarshal([]byte(line[len("data: "):]), &v) != nil {
				errs.Add(1)
			}
		case line == "":
			switch event {
			case "stats":
				stats.Add(1)
			case "room":
				rooms.Add(1)
				k.loadState(ctx)
			case "audit":
				audits.Add(1)
			case "deleted":
				return true
			}
			event = ""
		}
	}
	return false
}

func main() {
	base := flag.String("url", "", "server base URL")
	room := flag.String("room", "", "room")
	n := flag.Int("n", 1, "consoles")
	flag.Parse()
	token := os.Getenv("WAITROOM_ADMIN_TOKEN")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	start := time.Now()
	var wg sync.WaitGroup
	for range *n {
		jar, _ := cookiejar.New(nil)
		k := &console{base: *base, room: *room, c: &http.Client{Jar: jar, Transport: &http.Transport{MaxIdleConnsPerHost: 6}}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.run(ctx, token); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "console:", err)
				errs.Add(1)
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
	sec := time.Since(start).Seconds()
	fmt.Printf("%d consoles opened, %.1fs: per console per second %.2f stats, %.2f room, %.3f audit events, %.2f GET /v1/stats; %d errors\n",
		opens.Load(), sec, float64(stats.Load())/float64(*n)/sec, float64(rooms.Load())/float64(*n)/sec,
		float64(audits.Load())/float64(*n)/sec, float64(overviews.Load())/float64(*n)/sec, errs.Load())
}
EOF
(cd "$dir/consolecli" && go build -o "$dir/console" .)

WAITROOM_CPUPROFILE="$dir/cpu.pprof" "${SERVE_BIN:-$dir/waitroom}" serve --addr 127.0.0.1:0 --data "$dir/data" --join-limit 0 >"$dir/serve.out" 2>"$dir/serve.err" &
srv=$!
for _ in $(seq 100); do grep -q listening "$dir/serve.out" 2>/dev/null && break; sleep 0.1; done
addr=$(sed -n 's/.*listening on //p' "$dir/serve.out")
[[ -n $addr ]] || { echo "the server did not start:" >&2; cat "$dir/serve.err" >&2; exit 1; }
base=http://$addr
token=$(cat "$dir/data/admin-token")
export WAITROOM_ADMIN_TOKEN=$token
curl -sf -X PUT "$base/v1/rooms/$ROOM" -H "Authorization: Bearer $token" \
	-d "{\"capacity\":$CAPACITY,\"active_timeout\":\"10s\"}" >/dev/null
tick=$(getconf CLK_TCK)

cpu() { awk '{print $14+$15}' "/proc/$srv/stat"; }
admissions() { # the room's admissions so far (GET /v1/rooms, admin; GET /v1/rooms/{room} is the public status)
	local body
	for _ in 1 2 3 4 5; do
		if body=$(curl -sf --max-time 10 "$base/v1/rooms" -H "Authorization: Bearer $token"); then
			python3 -c 'import json,sys; print(next(r["admissions"] for r in json.load(sys.stdin)["rooms"] if r["room"] == sys.argv[1]))' "$ROOM" <<<"$body"
			return
		fi
		sleep 0.2
	done
	echo "    GET /v1/rooms failed 5 times (the server is behind: load average $(cut -d' ' -f1 /proc/loadavg)); this window does not count" >&2
	echo nan
}
now() { date +%s.%N; }
# window LABEL SECONDS: one measured window, a line "LABEL cores adm/s" in
# $dir/windows, and a readable line.
window() {
	local a0 c0 t0 a1 c1 t1
	a0=$(admissions); c0=$(cpu); t0=$(now)
	sleep "$2"
	c1=$(cpu); t1=$(now); a1=$(admissions)
	python3 - "$1" "$c0" "$c1" "$t0" "$t1" "$a0" "$a1" "$tick" <<'PY' | tee -a "$dir/windows"
import sys
label = sys.argv[1]
c0, c1, t0, t1, a0, a1, tick = map(float, sys.argv[2:])
sec = t1 - t0
print(f"{label} {(c1 - c0) / tick / sec:.4f} {(a1 - a0) / sec:.0f} {sec:.1f}")  # nan: no count
PY
}
# consoles N: opens N consoles, waits SETTLE for their opening requests.
consoles() {
	"$dir/console" --url "$base" --room "$ROOM" --n "$1" >>"$dir/console.out" 2>&1 &
	con=$!
	sleep "$SETTLE"
}
close_consoles() {
	kill -TERM "$con" 2>/dev/null || true
	wait "$con" 2>/dev/null || true
	con=
	tail -1 "$dir/console.out" | sed 's/^/    client: /'
	tail -1 "$dir/console.out" >>"$dir/clients"
	sleep 1
}

# slot LABEL SECONDS: a window with no console, one, or MANY, each after
# the same gap (the consoles' SETTLE, their close and a second).
slot() {
	case $1 in
	none) sleep $(( SETTLE + 1 )); window none "$2" ;;
	one) consoles 1; window one "$2"; close_consoles ;;
	many) consoles "$MANY"; window many "$2"; close_consoles ;;
	esac
}

echo "server $base (SQLite store), room $ROOM capacity $CAPACITY; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
load_secs=$(( WARMUP + ROUNDS * 3 * (WINDOW + SETTLE + 2) + 3 ))
echo "crowd: $(( ADMITS * load_secs )) people at $ADMITS a second for ${load_secs}s, hold $HOLD ($WORKERS workers, $SOURCES source addresses)"
"$dir/waitroom" load --target "$base" --room "$ROOM" --users $(( ADMITS * load_secs )) --rate "$ADMITS" \
	--hold "$HOLD" --duration "${load_secs}s" --workers "$WORKERS" --sources "$SOURCES" \
	--json "$dir/load.json" --chart none >"$dir/load.out" 2>"$dir/load.err" &
load=$!
sleep "$WARMUP"

echo
echo "== under load, $ROUNDS rounds of no console, 1 console, $MANY consoles (order rotating): consoles, server CPU (cores), admissions/s, seconds"
order=(none one many)
for (( i = 0; i < ROUNDS; i++ )); do
	for j in 0 1 2; do slot "${order[(i + j) % 3]}" "$WINDOW"; done
done
mv "$dir/windows" "$dir/loaded"
mv "$dir/clients" "$dir/loaded.clients"
wait "$load" || echo "load exited with $?"
load=
echo "crowd: $(sed -n '/^users/p' "$dir/load.out")"
# Those still admitted when the crowd stopped time out (active_timeout 10s):
# wait for the room to empty, so that no expiry falls in a quiet window.
for _ in $(seq 60); do
	[[ $(curl -sf "$base/v1/rooms/$ROOM") == *'"active":0,"waiting":0'* ]] && break
	sleep 1
done

echo
echo "== quiet server (the crowd gone, same room): consoles, server CPU (cores), admissions/s, seconds"
for k in none one many none; do slot "$k" "$QUIET"; done
mv "$dir/windows" "$dir/quiet"
mv "$dir/clients" "$dir/quiet.clients"

echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
# The server's CPU profile (WAITROOM_CPUPROFILE, written at shutdown): the
# samples in the console's handlers (every admin route, its authorization
# included, and the sign-in) and in the background GC, of all samples.
kill -TERM "$srv"; wait "$srv" 2>/dev/null || true; srv=
focus() {
	go tool pprof -top -nodefraction=0 -nodecount=1000000 -focus="$1" "$dir/cpu.pprof" 2>/dev/null |
		sed -n 's/^Showing nodes accounting for \([0-9.]*\)\(m\?s\), .* of \([0-9.]*\)\(m\?s\) total$/\1 \2 \3 \4/p'
}
read -r con_s con_u tot_s tot_u < <(focus 'adminOnly|console\.\(\*Console\)') || true
read -r gc_s gc_u _ < <(focus 'gcBgMarkWorker') || true
echo
python3 - "$dir/loaded" "$dir/quiet" "$MANY" "$ADMITS" "$dir/loaded.clients" "$dir/quiet.clients" \
	"${con_s:-0}${con_u:-s}" "${tot_s:-0}${tot_u:-s}" "${gc_s:-0}${gc_u:-s}" <<'PY'
import statistics as st, sys
def rows(f):
    return [(l.split()[0], float(l.split()[1]), float(l.split()[2])) for l in open(f)]
L = rows(sys.argv[1]); Q = rows(sys.argv[2]); many = int(sys.argv[3]); asked = int(sys.argv[4])
pct = lambda v: f"{v * 100:+.2f}%"
rounds = [L[i:i + 3] for i in range(0, len(L) - 2, 3)]
bad = [rd for rd in rounds if any(r[2] != r[2] or r[2] < 0.9 * asked for r in rd)]
if bad:
    print(f"under load: {len(bad)} of {len(rounds)} rounds left out: a window's admissions were unknown or under 90% of {asked}/s")
rounds = [rd for rd in rounds if rd not in bad]
L = [r for rd in rounds for r in rd]
rates = [r[2] for r in L] or [0.0]
if rounds: print(f"under load: admissions {min(rates):.0f}–{max(rates):.0f}/s a window (mean {st.mean(rates):.0f}; asked {asked}); server CPU, mean: "
      + ", ".join(f"{st.mean(r[1] for r in L if r[0] == k):.3f} cores with {k}" for k in ("none", "one", "many")))
for k, n in (("one", 1), ("many", many)) if rounds else ():
    raw, adj = [], []
    for rd in rounds:
        w = {r[0]: r for r in rd}
        raw.append((w[k][1] - w["none"][1]) / n)
        # the same, with the no-console window's CPU scaled to the window's admissions
        adj.append((w[k][1] - w["none"][1] * w[k][2] / max(w["none"][2], 1)) / n)
    print(f"  per console, {n} open ({k} − none)/{n}, per round: " + ", ".join(map(pct, raw))
          + f"; median {pct(st.median(raw))} of one core, spread {pct(min(raw))} … {pct(max(raw))}")
    print(f"      scaled to equal admissions: " + ", ".join(map(pct, adj)) + f"; median {pct(st.median(adj))}")
none = st.mean(r[1] for r in Q if r[0] == "none")
one = next(r[1] for r in Q if r[0] == "one")
mn = next(r[1] for r in Q if r[0] == "many")
print(f"quiet: server {none * 100:.2f}% of one core with no console (mean of "
      + ", ".join(f"{r[1] * 100:.2f}%" for r in Q if r[0] == "none") + f"), {one * 100:.2f}% with 1, {mn * 100:.2f}% with {many}")
print(f"  per console: {pct(one - none)} of one core (1 open), {pct((mn - none) / many)} ({many} open)")
def secs(v):
    return float(v[:-2]) / 1000 if v.endswith("ms") else float(v[:-1])
def console_seconds(f):  # "N consoles opened, T s: ..." per window
    t = 0.0
    for l in open(f):
        w = l.split()
        if len(w) > 3 and w[1] == "consoles":
            t += int(w[0]) * float(w[3].rstrip("s:,"))
    return t
con, tot, gc = secs(sys.argv[7]), secs(sys.argv[8]), secs(sys.argv[9])
cl, cq = console_seconds(sys.argv[5]), console_seconds(sys.argv[6])
if tot > 0 and cl > 0:
    share = con * (1 + gc / max(tot - gc, 1e-9))
    print(f"CPU profile of the whole run: the console's handlers {con:.2f}s of {tot:.1f}s sampled; background GC {gc:.1f}s "
          f"({gc / tot * 100:.0f}%). Consoles were open {cl:.0f} console-seconds under load, {cq:.0f} quiet.")
    print(f"  per console under load, at most (all of it charged to the loaded windows): {pct(con / cl)} of one core, "
          f"{pct(share / cl)} with the GC share added; over all console-seconds: {pct(share / (cl + cq))}")
PY
