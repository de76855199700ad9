package limit

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/roomview"
)

// Retry-After of refused joins. A full room or a process short of memory
// stays so for a while; asking a crowd to come back every second would only
// add load to a server that is already at its limit.
const RoomFullRetry = 5 * time.Second

// Joins is the check every new session goes through, in the API and on the
// waiting page: the per-address rate, the memory guard and the cap on live
// sessions per room. Its zero value allows everything. Set its fields before
// first use and do not change them afterwards. It is safe for concurrent use.
type Joins struct {
	// Rate limits joins per client address; nil means no limit.
	Rate *Limiter
	// Proxies are the trusted proxies whose X-Forwarded-For names the
	// client; empty means the client is always the connection's peer.
	Proxies clientaddr.Trusted
	// MaxSessionsPerRoom caps live sessions (waiting + active) per room; 0
	// means no cap. The count is the room view's (Rooms): the totals of the
	// room's latest event, or of a store read at most a second old;
	// concurrent joins may overshoot it by how many are in flight.
	MaxSessionsPerRoom int
	// Rooms is the room view the live counts come from; it is required
	// with MaxSessionsPerRoom.
	Rooms *roomview.View
	// Memory refuses joins while the process uses too much memory; nil means
	// no guard.
	Memory *MemoryGuard
}

// RetryError is a refusal with the time after which trying again makes
// sense; it unwraps to the *waitroom.Error (rate_limited or room_full).
type RetryError struct {
	Err   *waitroom.Error
	After time.Duration
}

func (e *RetryError) Error() string { return e.Err.Error() }

// Unwrap returns the domain error, so waitroom.ErrorCode sees its code.
func (e *RetryError) Unwrap() error { return e.Err }

// RetryAfterSeconds is the Retry-After header value for e: whole seconds,
// rounded up, at least 1.
func (e *RetryError) RetryAfterSeconds() int64 {
	return max(1, int64((e.After+time.Second-1)/time.Second))
}

// RetryAfter returns the Retry-After seconds of err when it is (or wraps) a
// *RetryError, and false otherwise.
func RetryAfter(err error) (int64, bool) {
	var re *RetryError
	if errors.As(err, &re) {
		return re.RetryAfterSeconds(), true
	}
	return 0, false
}

// Check decides whether r may make a new session in room at now: the
// per-address rate, then CheckCaps. It returns nil, or a *RetryError with
// code rate_limited (429) or room_full (503).
func (j *Joins) Check(ctx context.Context, r *http.Request, room string, now time.Time) error {
	if j == nil {
		return nil
	}
	if ok, wait := j.Rate.Allow(j.Proxies.Client(r), now); !ok {
		return &RetryError{After: wait, Err: waitroom.Errorf(waitroom.CodeRateLimited,
			"Too many joins from your address; try again in a moment.")}
	}
	return j.CheckCaps(ctx, room, now)
}

// CheckCaps is Check without the per-address rate, for trusted callers (a
// backend with the admin token joining for its users from one address): the
// memory guard and the cap per room protect the process from everyone.
func (j *Joins) CheckCaps(ctx context.Context, room string, now time.Time) error {
	if j == nil {
		return nil
	}
	if j.Memory.Over(now) {
		return &RetryError{After: RoomFullRetry, Err: waitroom.Errorf(waitroom.CodeRoomFull,
			"The waiting room is at its limit right now; try again in a moment.")}
	}
	if j.MaxSessionsPerRoom > 0 {
		n, err := j.live(ctx, room)
		if err != nil {
			return err
		}
		if n >= j.MaxSessionsPerRoom {
			return &RetryError{After: RoomFullRetry, Err: waitroom.Errorf(waitroom.CodeRoomFull,
				"The waiting room %q is full right now; try again in a moment.", room)}
		}
	}
	return nil
}

// live returns room's live count from the room view.
func (j *Joins) live(ctx context.Context, room string) (int, error) {
	if j.Rooms == nil {
		return 0, errors.New("limit: Joins.Rooms is nil with MaxSessionsPerRoom set")
	}
	snap, err := j.Rooms.Room(ctx, room)
	if err != nil {
		if waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound {
			return 0, nil // the join itself answers room_not_found
		}
		return 0, err
	}
	return snap.Live(), nil
}
