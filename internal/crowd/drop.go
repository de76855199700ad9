package crowd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/waitroom/waitroom"
)

// A drop is a run against a scheduled room: the crowd arrives before the
// room's opens_at and waits in its pre-queue; at the opening the server
// draws every entrant's ticket. The run then measures how soon each
// entrant's own stream showed a place in line, and checks the published
// draw with waitroom.VerifyDraw (what `waitroom verify-draw` runs) and
// against the tickets the crowd's sessions reached.

// DropReport is what a run measured about a scheduled room's opening.
type DropReport struct {
	// OpensAt is the room's opening.
	OpensAt time.Time `json:"opens_at"`
	// Entrants counts the people whose join entered the pre-queue.
	Entrants int `json:"entrants"`
	// Late counts the people who joined after the opening (first come,
	// first served, behind the drawn).
	Late int `json:"late_arrivals"`
	// LeftEarly counts entrants who left by their own choice before
	// seeing a place in line.
	LeftEarly int `json:"left_before_position"`
	// Lost counts the other entrants whose stream never showed a place in
	// line (waiting with a position, or active) within the run.
	Lost int `json:"lost"`
	// PositionMillis is, per entrant, the time from the opening to the
	// entrant's stream first showing a place in line.
	PositionMillis Percentiles `json:"opening_to_position_seen_ms"`
	// DrawnAfterMillis is how long after the opening the server held the
	// draw (its drawn_at).
	DrawnAfterMillis int64 `json:"drawn_after_ms"`
	// DrawEntries counts the entries of the published draw, from
	// FirstTicket on.
	DrawEntries int   `json:"draw_entries"`
	FirstTicket int64 `json:"first_ticket"`
	// Verified says the published draw passed waitroom.VerifyDraw;
	// DrawError says why not, or why the draw could not be read.
	Verified  bool   `json:"draw_verified"`
	DrawError string `json:"draw_error,omitempty"`
	// Listed counts the entrants that reached a ticket and are listed in
	// the draw under their entry with that very ticket; Missing those not
	// listed, WrongTicket those listed with another ticket, and
	// ListedGone those who left before the draw but are listed anyway.
	Listed      int    `json:"listed"`
	Missing     int    `json:"missing"`
	WrongTicket int    `json:"wrong_ticket"`
	ListedGone  int    `json:"listed_after_leaving"`
	FirstDiff   string `json:"first_diff,omitempty"`
	// Others counts draw entries that are none of this crowd's entrants
	// (people who joined the room from elsewhere).
	Others int `json:"other_entries"`
}

// startLead is how long after the run starts arrivals begin in a drop, so
// that worker processes are up when the schedule begins.
const startLead = 300 * time.Millisecond

// scheduleDrop sets the room's opens_at, keeping the rest of its
// configuration.
func scheduleDrop(ctx context.Context, opt Options, base, name string, opensAt time.Time) error {
	room, err := fullRoom(ctx, opt, base, name)
	if err != nil {
		return err
	}
	room.OpensAt = opensAt
	b, _ := json.Marshal(room.RoomConfig)
	if err := doJSON(ctx, opt.Client, "PUT", base+"/v1/rooms/"+name, opt.AdminToken, b, nil); err != nil {
		return fmt.Errorf("set opens_at of room %q (a room holds one draw: use a new room for each drop run): %w", name, err)
	}
	return nil
}

// fullRoom reads a room's whole configuration from the admin room list
// (the public room status leaves out timeouts and the page fields).
func fullRoom(ctx context.Context, opt Options, base, name string) (waitroom.Room, error) {
	var list struct {
		Rooms []waitroom.Room `json:"rooms"`
	}
	if err := getJSON(ctx, opt.Client, base+"/v1/rooms", opt.AdminToken, &list); err != nil {
		return waitroom.Room{}, err
	}
	for _, r := range list.Rooms {
		if r.Name == name {
			return r, nil
		}
	}
	return waitroom.Room{}, fmt.Errorf("room %q does not exist: create it first (PUT /v1/rooms/%s)", name, name)
}

// fetchDraw reads the room's published draw.
func fetchDraw(ctx context.Context, c *http.Client, base, room string) (waitroom.DrawRecord, error) {
	var d waitroom.DrawRecord
	err := getJSON(ctx, c, base+"/v1/rooms/"+room+"/draw", "", &d)
	return d, err
}

// summariseDrop fills rep.Drop from the users' results and the published
// draw (or the error reading it).
func summariseDrop(rep *Report, rec waitroom.DrawRecord, recErr error) {
	d := rep.Drop
	opens := d.OpensAt.UnixMilli()
	var delays []float64
	type want struct {
		ticket int64
		user   int
		gone   bool // left before the draw: must not be listed
	}
	entrants := map[string]want{}
	for _, u := range rep.UsersDetail {
		if u.JoinError != "" || u.JoinedAt == 0 {
			continue
		}
		if u.Entry == "" {
			d.Late++
			continue
		}
		d.Entrants++
		left := u.Left || (u.Final == string(waitroom.StatusLeft) && !u.Abandoned)
		switch {
		case u.PositionSeenAt != 0:
			delays = append(delays, float64(u.PositionSeenAt-opens))
		case left:
			d.LeftEarly++
		default:
			d.Lost++
		}
		entrants[u.Entry] = want{ticket: u.Ticket, user: u.User, gone: left && u.Ticket == 0}
	}
	d.PositionMillis = percentiles(delays)
	diff := func(format string, args ...any) {
		if d.FirstDiff == "" {
			d.FirstDiff = fmt.Sprintf(format, args...)
		}
	}
	switch {
	case recErr != nil:
		d.DrawError = recErr.Error()
		return
	case !rec.Drawn:
		d.DrawError = "the draw has not taken place"
		return
	}
	if err := waitroom.VerifyDraw(rec); err != nil {
		d.DrawError = err.Error()
	} else {
		d.Verified = true
	}
	d.DrawEntries, d.FirstTicket = len(rec.Entries), rec.FirstTicket
	d.DrawnAfterMillis = rec.DrawnAt.UnixMilli() - opens
	listed := make(map[string]int64, len(rec.Entries))
	for _, e := range rec.Entries {
		listed[e.Entry] = e.Ticket
		if _, ours := entrants[e.Entry]; !ours {
			d.Others++
		}
	}
	for entry, w := range entrants {
		t, ok := listed[entry]
		switch {
		case w.gone && ok:
			d.ListedGone++
			diff("person %d left before the draw but entry %s is listed with ticket %d", w.user, entry, t)
		case w.gone || w.ticket == 0:
			// Left before the draw, or lost (counted as such).
		case !ok:
			d.Missing++
			diff("person %d reached ticket %d but entry %s is not in the draw", w.user, w.ticket, entry)
		case t != w.ticket:
			d.WrongTicket++
			diff("person %d reached ticket %d but the draw lists entry %s with ticket %d", w.user, w.ticket, entry, t)
		default:
			d.Listed++
		}
	}
}

// errBeforeOpening is the draw error of a run that ended before the opening.
var errBeforeOpening = errors.New("the run ended before the opening")
