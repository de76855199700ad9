package crowd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/waitroom/waitroom"
)

// check freezes the crowd and the room, waits opt.Settle for updates to
// arrive, and compares every user's latest view with the server's line.
func check(ctx context.Context, opt Options, cfg Config, workers []*worker) (Check, error) {
	base := cfg.Targets[0]
	for _, w := range workers {
		if err := w.send(cmdFreeze); err != nil {
			return Check{}, err
		}
		if _, err := w.expect(ctx, "ack"); err != nil {
			return Check{}, err
		}
	}
	defer func() {
		for _, w := range workers {
			if w.send(cmdThaw) == nil {
				_, _ = w.expect(ctx, "ack")
			}
		}
	}()
	room, err := fullRoom(ctx, opt, base, cfg.Room)
	if err != nil {
		return Check{}, err
	}
	// Users' own requests in flight finish within the freeze's first
	// moments; pausing stops admissions, so the line holds still.
	paused := room.RoomConfig
	paused.Paused = true
	put := func(c waitroom.RoomConfig) error {
		b, _ := json.Marshal(c)
		return doJSON(ctx, opt.Client, "PUT", base+"/v1/rooms/"+cfg.Room, opt.AdminToken, b, nil)
	}
	if !room.Paused {
		if err := put(paused); err != nil {
			return Check{}, err
		}
		defer put(room.RoomConfig)
	}
	time.Sleep(200 * time.Millisecond) // in-flight user requests land
	truth, err := readLine(ctx, opt, base, cfg.Room)
	if err != nil {
		return Check{}, err
	}
	settle := opt.Settle
	if settle <= 0 {
		settle = 7 * time.Second
	}
	time.Sleep(settle) // the delivery window
	// The line must not have moved while we waited.
	again, err := readLine(ctx, opt, base, cfg.Room)
	if err != nil {
		return Check{}, err
	}
	if !sameLine(truth, again) {
		return Check{}, fmt.Errorf("the line moved while frozen (%d then %d waiting)", len(truth), len(again))
	}
	c := Check{At: time.Now(), Waiting: len(truth)}
	for _, w := range workers {
		if err := w.send(cmdSnap); err != nil {
			return Check{}, err
		}
		l, err := w.expect(ctx, "snap")
		if err != nil {
			return Check{}, err
		}
		for _, s := range l.Snap {
			ticket, pos, st := s[0], s[1], s[2]
			want, waiting := truth[ticket]
			c.Compared++
			// Checks run only after any draw reached the crowd: an entrant
			// still without a ticket (st == snapEntrant) is wrong.
			ok := (st == snapWaiting && waiting && pos == want) || (st != snapWaiting && st != snapEntrant && !waiting)
			if !ok {
				c.Wrong++
				if c.FirstDiff == "" && st == snapEntrant {
					c.FirstDiff = "a user still sees the pre-queue (no ticket) after the draw"
				} else if c.FirstDiff == "" {
					c.FirstDiff = fmt.Sprintf("ticket %d: user sees status code %d position %d, server has waiting=%v position %d", ticket, st, pos, waiting, want)
				}
			}
		}
	}
	return c, nil
}

func sameLine(a, b map[int64]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// readLine reads the whole waiting line: ticket → position.
func readLine(ctx context.Context, opt Options, base, room string) (map[int64]int64, error) {
	out := map[int64]int64{}
	after := ""
	for {
		var page struct {
			Sessions []waitroom.Session `json:"sessions"`
			Next     string             `json:"next"`
		}
		url := base + "/v1/rooms/" + room + "/waiting?limit=1000"
		if after != "" {
			url += "&after=" + after
		}
		if err := getJSON(ctx, opt.Client, url, opt.AdminToken, &page); err != nil {
			return nil, err
		}
		for _, s := range page.Sessions {
			out[s.Ticket] = s.Position
		}
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}
