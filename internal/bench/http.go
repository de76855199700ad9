package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	wrserver "github.com/waitroom/waitroom/server"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
	"github.com/waitroom/waitroom/sqlitestore"
)

// httpWaiting is how many sessions wait in the room the HTTP position row
// reads from.
const httpWaiting = 10_000

// httpRows measures the API through the real handler (wired as `waitroom
// serve` wires it: ETA fill, push hub, metrics; without the per-address
// join limit, as `--join-limit 0`, since the load comes from one address)
// over loopback TCP, against
// a hello-world handler on the same kind of server, both loaded by the same
// minimal HTTP/1.1 client over keep-alive connections. The client is
// minimal so that the server's work, not the client's, sets the figures.
func httpRows(ctx context.Context, opt Options, dir string) []Row {
	conns := opt.Callers[0]
	// Durable joins are also measured at the most callers: group commit
	// shares each fsync among the callers waiting on it, so how many there
	// are decides the figure (see docs/BENCHMARKS.md).
	many := slices.Max(opt.Callers)
	rows := []Row{
		{Name: fmt.Sprintf("HTTP position (GET session, sqlitestore), %d conns", conns), Unit: "req/s", Baseline: "hello-world handler", Goal: 0.85},
		{Name: fmt.Sprintf("HTTP durable join (POST, sqlitestore), %d conns", conns), Unit: "req/s", Baseline: "hello-world handler", Goal: 0.5},
		{Name: fmt.Sprintf("HTTP join (POST, memstore), %d conns", conns), Unit: "req/s", Baseline: "hello-world handler"},
		{Name: fmt.Sprintf("HTTP position (GET session, memstore), %d conns", conns), Unit: "req/s", Baseline: "hello-world handler"},
	}
	if many != conns {
		rows = slices.Insert(rows, 2, Row{Name: fmt.Sprintf("HTTP durable join (POST, sqlitestore), %d conns", many), Unit: "req/s", Baseline: "hello-world handler", Goal: 0.5})
	}
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "http.db"))
	if err != nil {
		return skipped("sqlitestore: "+err.Error(), rows...)
	}
	defer st.Close()
	durable, err := newAPI(ctx, st, dir)
	if err != nil {
		return skipped(err.Error(), rows...)
	}
	defer durable.close()
	mem := memstore.New()
	defer mem.Close()
	inMemory, err := newAPI(ctx, mem, dir)
	if err != nil {
		return skipped(err.Error(), rows...)
	}
	defer inMemory.close()
	hello, err := serveHTTP(helloHandler())
	if err != nil {
		return skipped(err.Error(), rows...)
	}
	defer hello.close()

	ids, err := fillRoom(ctx, st, httpWaiting, conns)
	if err != nil {
		return skipped("fill the room: "+err.Error(), rows...)
	}
	memIDs, err := fillRoom(ctx, mem, httpWaiting, conns)
	if err != nil {
		return skipped("fill the room: "+err.Error(), rows...)
	}
	// HTTP figures swing most with what else the machine runs: alternate
	// three times as often as the other rows.
	rounds := 3 * opt.Rounds
	per := opt.Time / time.Duration(rounds)
	get := func(prefix string, ids []string) func(rng *rand.Rand, b []byte) []byte {
		return func(rng *rand.Rand, b []byte) []byte {
			b = append(b, "GET "...)
			b = append(b, prefix...)
			b = append(b, ids[rng.IntN(len(ids))]...)
			return append(b, " HTTP/1.1\r\nHost: bench\r\nUser-Agent: waitroom-bench\r\n\r\n"...)
		}
	}
	post := func(path string) func(*rand.Rand, []byte) []byte {
		req := "POST " + path + " HTTP/1.1\r\nHost: bench\r\nUser-Agent: waitroom-bench\r\nContent-Length: 0\r\n\r\n"
		return func(_ *rand.Rand, b []byte) []byte { return append(b, req...) }
	}
	type httpCase struct {
		subject, baseline *server
		conns             int
		req, helloReq     func(*rand.Rand, []byte) []byte
		status            int
	}
	cases := []httpCase{
		{durable.srv, hello, conns, get("/v1/rooms/"+benchRoom+"/sessions/", ids), get("/hello/", ids), http.StatusOK},
		{durable.srv, hello, conns, post("/v1/rooms/" + benchRoom + "/sessions"), post("/hello"), http.StatusCreated},
		{inMemory.srv, hello, conns, post("/v1/rooms/" + benchRoom + "/sessions"), post("/hello"), http.StatusCreated},
		{inMemory.srv, hello, conns, get("/v1/rooms/"+benchRoom+"/sessions/", memIDs), get("/hello/", memIDs), http.StatusOK},
	}
	if many != conns {
		cases = slices.Insert(cases, 2, httpCase{durable.srv, hello, many, post("/v1/rooms/" + benchRoom + "/sessions"), post("/hello"), http.StatusCreated})
	}
	for i, c := range cases {
		sub, err := newLoad(c.subject.addr, c.conns, c.req, c.status)
		if err != nil {
			rows[i].Skipped = err.Error()
			continue
		}
		base, err := newLoad(c.baseline.addr, c.conns, c.helloReq, http.StatusOK)
		if err != nil {
			sub.close()
			rows[i].Skipped = err.Error()
			continue
		}
		s, b, err := compare(ctx, opt.Time, rounds, concurrent(c.conns, per, sub.do), concurrent(c.conns, per, base.do))
		sub.close()
		base.close()
		if err != nil {
			rows[i].Skipped = "failed: " + err.Error()
			continue
		}
		rows[i].Value, rows[i].BaselineValue = s.rate(), b.rate()
		rows[i].CPURatio = ratio(s.perCPU(), b.perCPU())
		rows[i].Note = fmt.Sprintf("per CPU-second %s; %s vs %s CPU µs/req incl. client",
			Ratio(rows[i].CPURatio), Number(1e6/s.perCPU()), Number(1e6/b.perCPU()))
	}
	for _, i := range []int{0, len(rows) - 1} {
		if rows[i].Skipped == "" {
			rows[i].Note += fmt.Sprintf("; %s waiting", Group(httpWaiting))
		}
	}
	return rows
}

// benchRoom is the room the HTTP rows use.
const benchRoom = "bench"

// api is a whole waitroom server (package server, as `waitroom serve`
// assembles it) over a store, its handler served on loopback by the same
// kind of http.Server as the baseline's.
type api struct {
	srv    *server
	server *wrserver.Server
}

// newAPI assembles a server over st, its keys in a folder under dir. The
// per-address join limit and the session cap are off: the bench's callers
// all come from one address and fill the room on purpose.
func newAPI(ctx context.Context, st waitroom.Store, dir string) (*api, error) {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.WaitingTimeout = waitroom.Duration(time.Hour) // the line holds still while measured
	if _, _, err := st.PutRoom(ctx, benchRoom, cfg, time.Now()); err != nil {
		return nil, fmt.Errorf("create the room: %w", err)
	}
	data, err := os.MkdirTemp(dir, "server-")
	if err != nil {
		return nil, fmt.Errorf("server folder: %w", err)
	}
	sc := wrserver.Defaults()
	sc.Store, sc.DataDir = st, data
	sc.AdminToken = "bench-admin-token-not-used"
	sc.JoinsPerMinute, sc.MaxSessionsPerRoom = 0, 0
	sc.WebhookAllowPrivate = true // the webhook rows' receiver is on loopback
	ws, err := wrserver.New(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("assemble the server: %w", err)
	}
	srv, err := serveHTTP(ws.Handler())
	if err != nil {
		ws.Close()
		return nil, err
	}
	return &api{srv: srv, server: ws}, nil
}

func (a *api) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.server.Shutdown(ctx)
	a.srv.close()
	_ = a.server.Close()
}

// helloHandler is the classic hello world, a ServeMux with one route that
// answers a small JSON body: the least an HTTP API can do on this server,
// so the ceiling for the real one.
func helloHandler() http.Handler {
	body := []byte(`{"hello":"world"}` + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	return mux
}

// server is an http.Server on a loopback port, configured as `waitroom
// serve` configures its own.
type server struct {
	addr string
	hs   *http.Server
}

func serveHTTP(h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() { _ = hs.Serve(ln) }()
	return &server{addr: ln.Addr().String(), hs: hs}, nil
}

func (s *server) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.hs.Shutdown(ctx)
}

// fillRoom joins n sessions to the bench room from callers goroutines and
// returns their ids.
func fillRoom(ctx context.Context, st waitroom.Store, n, callers int) ([]string, error) {
	ids := make([]string, n)
	err := fan(ctx, callers, n, func(ctx context.Context, i int) error {
		s, err := st.Join(ctx, benchRoom, "", time.Now())
		ids[i] = s.ID
		return err
	})
	return ids, err
}

// load is a set of keep-alive connections to one server, each used by
// one caller at a time.
type load struct {
	conns  []*rawConn
	req    func(rng *rand.Rand, b []byte) []byte
	status int
}

func newLoad(addr string, n int, req func(*rand.Rand, []byte) []byte, status int) (*load, error) {
	l := &load{req: req, status: status}
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("connect to %s: %w", addr, err)
		}
		l.conns = append(l.conns, &rawConn{c: c, r: bufio.NewReaderSize(c, 16<<10), rng: rand.New(rand.NewPCG(uint64(i), 9))})
	}
	return l, nil
}

func (l *load) close() {
	for _, c := range l.conns {
		c.c.Close()
	}
}

// do sends one request on the caller's connection and reads the answer.
func (l *load) do(_ context.Context, caller int) error {
	c := l.conns[caller]
	c.buf = l.req(c.rng, c.buf[:0])
	if _, err := c.c.Write(c.buf); err != nil {
		return err
	}
	status, err := readResponse(c.r)
	if err != nil {
		return err
	}
	if status != l.status {
		return fmt.Errorf("status %d, want %d", status, l.status)
	}
	return nil
}

// rawConn is one client connection.
type rawConn struct {
	c   net.Conn
	r   *bufio.Reader
	rng *rand.Rand
	buf []byte
}

// readResponse reads one HTTP/1.1 response (status line, headers, a body
// by Content-Length or chunked) and returns its status code.
func readResponse(r *bufio.Reader) (int, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length, chunked := -1, false
	for {
		h, err := r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(v)); err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		}
	}
	switch {
	case chunked:
		return status, skipChunked(r)
	case length >= 0:
		_, err = r.Discard(length)
		return status, err
	}
	return 0, errors.New("a response without a length on a keep-alive connection")
}

// skipChunked reads and discards a chunked body and its trailer.
func skipChunked(r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 64)
		if err != nil {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			for {
				t, err := r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := r.Discard(int(n) + 2); err != nil {
			return err
		}
	}
}
