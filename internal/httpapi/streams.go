package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/push"
)

// Stream timing. The heartbeat keeps proxies from closing an idle stream;
// presence is refreshed at least this often while a stream is open.
const (
	streamHeartbeat = 15 * time.Second
	maxPresenceTick = 15 * time.Second
	minPresenceTick = time.Second
	// awayTimeout bounds the Away call made after a client disconnects.
	awayTimeout = 5 * time.Second
)

// stream is what SSE and WebSocket share: the session being watched and the
// presence it keeps up while the client is connected.
type stream struct {
	s        *server
	room, id string
	watch    *push.Watch
	presence time.Duration
	closed   bool
	hold     streamHold // what it holds of the per-session and per-address caps
}

// openStream validates the request and reads the session (which counts as
// presence), before anything is written, so errors are the usual JSON ones.
// With notify set, the watch calls it on every change instead of
// signalling a channel (push.Hub.WatchFunc).
func (s *server) openStream(r *http.Request, notify func()) (*stream, waitroom.Session, error) {
	room, err := roomName(r)
	if err != nil {
		return nil, waitroom.Session{}, err
	}
	if s.hub == nil {
		return nil, waitroom.Session{}, waitroom.Errorf(waitroom.CodeUnavailable,
			"This server serves no live streams; poll the session (GET …/sessions/{id}).")
	}
	if s.maxStreams > 0 && s.streams.Load() >= s.maxStreams {
		s.caps.refusedGlobally()
		return nil, waitroom.Session{}, waitroom.Errorf(waitroom.CodeUnavailable,
			"This server holds as many live streams as it can; poll the session (GET …/sessions/{id}) or try again shortly.")
	}
	// The address is counted before the store is read, so a client at its
	// cap costs no store read; the session once it is known to exist.
	var hold streamHold
	if err := s.caps.takeAddress(r, &hold); err != nil {
		return nil, waitroom.Session{}, err
	}
	id := r.PathValue("id")
	now := s.now()
	cur, err := s.store.Session(r.Context(), room, id, now)
	if err != nil {
		s.caps.give(hold)
		return nil, waitroom.Session{}, err
	}
	if err := s.caps.takeSession(room, id, &hold); err != nil {
		return nil, waitroom.Session{}, err
	}
	s.complete(&cur, now)
	st := &stream{s: s, room: room, id: id, presence: maxPresenceTick, hold: hold}
	s.streams.Add(1)
	if s.presence > 0 {
		st.presence = s.presence
	} else if info, err := s.store.Room(r.Context(), room); err == nil && info.WaitingTimeout > 0 {
		// Refresh well inside waiting_timeout, so an open stream alone keeps a
		// waiting session in line.
		st.presence = min(max(info.WaitingTimeout.D()/3, minPresenceTick), maxPresenceTick)
	}
	if !cur.Status.Final() {
		if notify != nil {
			st.watch = s.hub.WatchFunc(cur, notify)
		} else {
			st.watch = s.hub.Watch(cur)
		}
	}
	return st, cur, nil
}

// touch records presence for an open stream.
func (st *stream) touch(ctx context.Context) {
	if _, err := st.s.store.Session(ctx, st.room, st.id, st.s.now()); err != nil && ctx.Err() == nil {
		st.s.log.Warn("httpapi: presence of an open stream", "room", st.room, "err", err)
	}
}

// close ends the watch; when the client went away while waiting (rather
// than the session ending, the server shutting down, or the page moving on
// after the stream told it the session was admitted), the session's grace
// period starts.
func (st *stream) close(clientGone bool, last waitroom.Session) {
	if st.closed {
		return
	}
	st.closed = true
	defer st.s.streams.Add(-1) // after Away: the stream is done
	defer st.s.caps.give(st.hold)
	if st.watch != nil {
		st.watch.Stop()
	}
	if !clientGone || last.Status != waitroom.StatusWaiting {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), awayTimeout)
	defer cancel()
	if err := st.s.store.Away(ctx, st.room, st.id, st.s.now()); err != nil && waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		st.s.log.Warn("httpapi: away after a dropped stream", "room", st.room, "err", err)
	}
}

// events: GET /v1/rooms/{room}/sessions/{id}/events, Server-Sent Events.
// Each message is "event: session" with the Session JSON: once on connect,
// then whenever the session's status, position, ETA or room totals change.
// Event ids increase across reconnects: they continue above Last-Event-ID.
func (s *server) events(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodHead {
		// The mux serves HEAD with GET's handler: check the session, answer
		// the stream's head, and hold nothing open.
		st, cur, err := s.openStream(r, nil)
		if err != nil {
			return err
		}
		st.close(false, cur)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	var hs *hijacked
	var notify func()
	if r.ProtoMajor == 1 {
		hs = &hijacked{s: s}
		notify = hs.kick
	}
	st, cur, err := s.openStream(r, notify)
	if err != nil {
		return err
	}
	if hs != nil {
		if hs.start(w, r, st, cur) {
			return nil
		}
		// Not hijackable after all: a watch with a channel for the pump.
		if st.watch != nil {
			st.watch.Stop()
			st.watch = s.hub.Watch(cur)
		}
	}
	ctx := r.Context()
	rc := http.NewResponseController(w)
	// The server may have a write timeout; a stream lives as long as it is needed.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	next := lastEventID(r.Header.Get("Last-Event-ID"))
	buf := make([]byte, 0, 1024)
	send := func(x waitroom.Session) error {
		next = max(next+1, uint64(s.now().UnixMilli()))
		buf = append(buf[:0], "id: "...)
		buf = strconv.AppendUint(buf, next, 10)
		buf = append(buf, "\nevent: session\ndata: "...)
		buf = x.AppendJSON(buf)
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return err
		}
		return rc.Flush()
	}
	if _, err := w.Write([]byte("retry: 2000\n\n")); err != nil {
		st.close(true, cur)
		return nil
	}
	if err := send(cur); err != nil || st.watch == nil {
		st.close(err != nil, cur)
		return nil
	}
	last, gone := st.pump(ctx, cur, send, func() error {
		if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
			return err
		}
		return rc.Flush()
	})
	st.close(gone, last)
	return nil
}

// pump sends each new state of the watched session until the session ends,
// the watch closes (room gone, server stopping) or the client goes; it runs
// keepalive every heartbeat and refreshes presence while the stream is open.
// It returns the last state sent and whether the client went away.
func (st *stream) pump(ctx context.Context, cur waitroom.Session, send func(waitroom.Session) error, keepalive func() error) (last waitroom.Session, clientGone bool) {
	beat := time.NewTicker(st.s.beat)
	defer beat.Stop()
	presence := time.NewTicker(st.presence)
	defer presence.Stop()
	last, sent := cur, uint64(1)
	for {
		select {
		case <-ctx.Done():
			return last, true
		case _, open := <-st.watch.C():
			x, version := st.watch.Latest()
			if version != sent {
				sent, last = version, x
				if err := send(x); err != nil {
					return last, true
				}
			}
			if !open || x.Status.Final() {
				return last, false
			}
		case <-beat.C:
			if err := keepalive(); err != nil {
				return last, true
			}
		case <-presence.C:
			st.touch(ctx)
		}
	}
}

// lastEventID parses the Last-Event-ID header: the ids this server sends are
// decimal numbers. Anything else is ignored, as a browser would resend it.
func lastEventID(v string) uint64 {
	if v == "" || len(v) > 20 {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > 1<<62 {
		return 0
	}
	return n
}

// websocket: GET /v1/rooms/{room}/sessions/{id}/ws. The same updates as
// events, one Session JSON text message each; the server pings every 15s.
// Messages from the client are not expected: the connection only pushes.
// Cross-origin handshakes are refused (the browser's Origin must match the
// Host), so another site cannot read a session through a visitor's browser.
func (s *server) websocket(w http.ResponseWriter, r *http.Request) error {
	st, cur, err := s.openStream(r, nil)
	if err != nil {
		return err
	}
	// The handshake is checked here first so that its failures are the usual
	// JSON errors; websocket.Accept would answer them in plain text.
	if err := checkHandshake(r); err != nil {
		st.close(false, cur)
		return err
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		// Accept has answered the client (a bad handshake or origin).
		st.close(false, cur)
		return nil
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	send := func(x waitroom.Session) error {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return c.Write(wctx, websocket.MessageText, x.AppendJSON(nil))
	}
	if err := send(cur); err != nil || st.watch == nil {
		st.close(err != nil, cur)
		c.Close(websocket.StatusNormalClosure, "session ended")
		return nil
	}
	last, gone := st.pump(ctx, cur, send, func() error {
		pctx, cancel := context.WithTimeout(ctx, s.beat)
		defer cancel()
		return c.Ping(pctx)
	})
	st.close(gone, last)
	if !gone {
		c.Close(websocket.StatusNormalClosure, string(last.Status))
	}
	return nil
}

// checkHandshake refuses what websocket.Accept would refuse, with the same
// rules: a GET over HTTP/1.1 with Connection: upgrade, Upgrade: websocket,
// Sec-WebSocket-Version 13 and a key; and, when the browser sends an Origin,
// one whose host is this request's Host (another site's page must not read a
// session through its visitor's browser; same-origin pages and non-browser
// clients, which send no Origin, are served).
func checkHandshake(r *http.Request) error {
	if !r.ProtoAtLeast(1, 1) || !headerHas(r.Header, "Connection", "upgrade") ||
		!headerHas(r.Header, "Upgrade", "websocket") || r.Header.Get("Sec-WebSocket-Key") == "" {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "This endpoint needs a WebSocket handshake (or use the events endpoint).")
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "Only WebSocket version 13 is supported.")
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return waitroom.Errorf(apierror.CodeForbidden, "Cross-origin WebSocket connections are not allowed.")
		}
	}
	return nil
}

// headerHas reports whether a comma-separated header holds token, ignoring case.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
