package redisstore_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/redisstore"
)

// testTierProcesses runs three processes joining one tiered room at once:
// joins spending one three-use invite race joins into both tiers, some with
// keys. Exactly three invite joins get in; every process then lists the
// same line, with the places the tier rules give, each session reads its
// position and tier alike from every process, the events every process
// heard carry the tiers, and admission follows the line with no inversion.
func testTierProcesses(t *testing.T, newClient func() redis.UniversalClient, policy waitroom.TierPolicy) {
	prefix := freshPrefix()
	ps := []*process{
		newProcess(t, "a", newClient, prefix),
		newProcess(t, "b", newClient, prefix),
		newProcess(t, "c", newClient, prefix),
	}
	ctx := t.Context()
	cfg := waitroom.RoomConfig{
		Mode: waitroom.ModeAuto, Capacity: 0, Grace: waitroom.Duration(time.Minute),
		Tiers:      []waitroom.Tier{{Name: "vip", Share: 0.25}, {Name: "general"}},
		TierPolicy: policy,
	}
	if _, _, err := ps[0].store.PutRoom(ctx, "r", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	for _, p := range ps[1:] {
		if _, err := p.store.Room(ctx, "r"); err != nil { // follow its events from the start
			t.Fatalf("Room: %v", err)
		}
	}
	const workers, perWork = 4, 12 // per process
	inv := waitroom.TokenUse{Kind: waitroom.TokenInvite, ID: "shared", Max: 3, Expires: base.Add(time.Hour)}
	var clock atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(clock.Add(1)) * time.Millisecond) }
	var (
		mu       sync.Mutex
		joined   []waitroom.Session
		invited  atomic.Int64
		refused  atomic.Int64
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for pi, p := range ps {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWork {
					var req waitroom.JoinRequest
					switch i % 4 {
					case 0: // an invite to vip, all on one three-use invite
						req = waitroom.JoinRequest{Tier: "vip", Uses: []waitroom.TokenUse{inv}}
					case 1:
						req = waitroom.JoinRequest{Tier: "vip", Key: fmt.Sprintf("k%d-%d-%d", pi, w, i)}
					case 2:
						req = waitroom.JoinRequest{Key: fmt.Sprintf("k%d-%d-%d", pi, w, i)}
					default: // a plain Join: the lowest tier, maybe in a batch
						s, err := p.store.Join(ctx, "r", "", now())
						if err != nil {
							fail("Join: %v", err)
							continue
						}
						mu.Lock()
						joined = append(joined, s)
						mu.Unlock()
						continue
					}
					s, err := p.store.JoinWith(ctx, "r", req, now())
					switch code := waitroom.ErrorCode(err); {
					case code == "":
						if len(req.Uses) > 0 {
							invited.Add(1)
						}
						want := req.Tier
						if want == "" {
							want = "general"
						}
						if s.Tier != want || s.Place <= 0 {
							fail("JoinWith(%+v) = tier %q place %d; want %q and a positive place", req, s.Tier, s.Place, want)
						}
						mu.Lock()
						joined = append(joined, s)
						mu.Unlock()
					case code == waitroom.CodeInviteUsed && len(req.Uses) > 0:
						refused.Add(1)
					default:
						fail("JoinWith(%+v): %v", req, err)
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		return
	}
	if invited.Load() != 3 || invited.Load()+refused.Load() != int64(len(ps)*workers*perWork/4) {
		t.Fatalf("%d invite joins got in and %d were refused; want 3 in, the rest refused", invited.Load(), refused.Load())
	}

	// The line each process lists, in pages of 5, is the same, ordered by
	// place with positions 1.., and its places are those of the rules.
	var line []waitroom.Session
	for _, p := range ps {
		got := listLine(t, p.store, "r", 5)
		if len(got) != len(joined) {
			t.Fatalf("%s lists %d waiting, %d joined", p.name, len(got), len(joined))
		}
		if line == nil {
			line = got
			continue
		}
		for i := range got {
			if got[i].ID != line[i].ID || got[i].Position != line[i].Position || got[i].Place != line[i].Place || got[i].Tier != line[i].Tier {
				t.Fatalf("%s lists %d as #%d pos %d place %d tier %q; a lists #%d pos %d place %d tier %q", p.name, i,
					got[i].Ticket, got[i].Position, got[i].Place, got[i].Tier, line[i].Ticket, line[i].Position, line[i].Place, line[i].Tier)
			}
		}
	}
	checkTierPlaces(t, cfg, line)
	// Each session reads the same position and tier from every process.
	for i, p := range ps {
		got, err := p.store.Sessions(ctx, "r", ids(line))
		if err != nil {
			t.Fatalf("%s Sessions: %v", p.name, err)
		}
		for j, s := range got {
			if s.Position != int64(j+1) || s.Tier != line[j].Tier || s.Place != line[j].Place {
				t.Fatalf("%s reads #%d at position %d tier %q place %d; want %d %q %d", ps[i].name, s.Ticket, s.Position, s.Tier, s.Place,
					j+1, line[j].Tier, line[j].Place)
			}
		}
	}
	// Every process heard every join, its own and the others', with its tier.
	tierOf := map[int64]string{}
	for _, s := range line {
		tierOf[s.Ticket] = s.Tier
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range ps {
		for {
			heard := map[int64]string{}
			for _, e := range p.events.snapshot() {
				for _, c := range e.Changes {
					if e.Room == "r" && c.From == "" {
						heard[c.Session.Ticket] = c.Session.Tier
					}
				}
			}
			if len(heard) == len(tierOf) {
				for tk, tier := range tierOf {
					if heard[tk] != tier {
						t.Fatalf("%s heard #%d join tier %q, want %q", p.name, tk, heard[tk], tier)
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s heard %d joins, want %d", p.name, len(heard), len(tierOf))
			}
			time.Sleep(20 * time.Millisecond) // polling pub/sub delivery
		}
	}

	// Admission follows the line: the first ten, with no inversion.
	cfg.Capacity = 10
	room, _, err := ps[1].store.PutRoom(ctx, "r", cfg, now())
	if err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	if room.Active != 10 || room.Inversions != 0 {
		t.Fatalf("after opening: %d active, %d inversions; want 10 and 0", room.Active, room.Inversions)
	}
	got, err := ps[2].store.Sessions(ctx, "r", ids(line))
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	for i, s := range got {
		if want := i < 10; (s.Status == waitroom.StatusActive) != want || s.Tier != line[i].Tier || s.Place != line[i].Place {
			t.Fatalf("line #%d (%d in line) is %s tier %q place %d; want active %v, tier %q place %d", s.Ticket, i+1, s.Status,
				s.Tier, s.Place, want, line[i].Tier, line[i].Place)
		}
	}
	// Tiers cannot change while people are in the room.
	other := cfg
	other.Tiers = []waitroom.Tier{{Name: "gold"}, {Name: "general"}}
	other.TierPolicy = waitroom.TierStrict
	if _, _, err := ps[0].store.PutRoom(ctx, "r", other, now()); waitroom.ErrorCode(err) != waitroom.CodeRoomNotEmpty {
		t.Fatalf("changing the tiers of a full room: %v, want %s", err, waitroom.CodeRoomNotEmpty)
	}
}

// listLine reads room's whole line in pages of size.
func listLine(t *testing.T, st waitroom.Store, room string, size int) []waitroom.Session {
	t.Helper()
	var out []waitroom.Session
	after := ""
	for {
		page, next, err := st.Waiting(t.Context(), room, waitroom.Page{After: after, Limit: size})
		if err != nil {
			t.Fatalf("Waiting: %v", err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		after = next
	}
}

// checkTierPlaces checks a line of a room with tiers no session of which
// was admitted: positions 1.., places rising, and each session's place the
// one its tier and ticket give (under weighted fair queuing the k-th of a
// tier, by ticket, has the tag k times its tier's step).
func checkTierPlaces(t *testing.T, cfg waitroom.RoomConfig, line []waitroom.Session) {
	t.Helper()
	byTicket := slices.Clone(line)
	slices.SortFunc(byTicket, func(a, b waitroom.Session) int { return int(a.Ticket - b.Ticket) })
	steps := cfg.TierSteps()
	want := map[int64]int64{}
	k := map[int]int64{}
	for _, s := range byTicket {
		i := cfg.TierIndex(s.Tier)
		if i < 0 {
			t.Fatalf("#%d has tier %q", s.Ticket, s.Tier)
		}
		k[i]++
		if cfg.TierPolicy == waitroom.TierWeighted {
			want[s.Ticket] = waitroom.WeightedPlace(i, k[i]*steps[i])
		} else {
			want[s.Ticket] = waitroom.StrictPlace(i, s.Ticket)
		}
	}
	for i, s := range line {
		if s.Position != int64(i+1) || s.Place != want[s.Ticket] || (i > 0 && s.Place <= line[i-1].Place) {
			t.Fatalf("line item %d: #%d pos %d place %d; want pos %d place %d, rising", i, s.Ticket, s.Position, s.Place, i+1, want[s.Ticket])
		}
	}
}

// TestJoinWithRetried checks that a join spending a token, whose first run
// happened but whose answer was lost (go-redis sends it again), answers
// with the session it made and spends the token once.
func TestJoinWithRetried(t *testing.T) {
	client := standalone(t)
	s := newStoreOn(client)(t)
	ctx := t.Context()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.Tiers = []waitroom.Tier{{Name: "vip"}, {Name: "general"}}
	if _, _, err := s.PutRoom(ctx, "r", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	inv := waitroom.TokenUse{Kind: waitroom.TokenInvite, ID: "once", Max: 2, Expires: base.Add(time.Hour)}
	client.AddHook(dropFirstReply{n: new(atomic.Int32)})
	got, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Key: "k", Tier: "vip", Uses: []waitroom.TokenUse{inv}}, base)
	if err != nil {
		t.Fatalf("JoinWith retried after a lost reply: %v", err)
	}
	if got.Ticket != 1 || got.Key != "k" || got.Tier != "vip" || got.Position != 1 {
		t.Fatalf("JoinWith = %+v, want ticket 1 with key k, tier vip, position 1", got)
	}
	// The retry spent nothing: one use is left.
	if _, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{inv}}, base); err != nil {
		t.Fatalf("second use of a two-use invite: %v", err)
	}
	_, err = s.JoinWith(ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{inv}}, base)
	if waitroom.ErrorCode(err) != waitroom.CodeInviteUsed {
		t.Fatalf("third use of a two-use invite: %v, want %s", err, waitroom.CodeInviteUsed)
	}
}

// TestTokenUseKeys checks how token counts are kept: by the operations'
// clock (not Redis'), the ended ones dropped by later joins that spend,
// and all of them with the room.
func TestTokenUseKeys(t *testing.T) {
	client := standalone(t)
	prefix := freshPrefix()
	s, err := redisstore.New(t.Context(), client, redisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := s.PutRoom(ctx, "r", cfg, base); err != nil {
		t.Fatalf("PutRoom: %v", err)
	}
	uc, ux := prefix+":{r}:uc", prefix+":{r}:ux"
	join := func(id string, ttl time.Duration, at time.Time) error {
		u := waitroom.TokenUse{Kind: waitroom.TokenChallenge, ID: id, Max: 1, Expires: at.Add(ttl)}
		_, err := s.JoinWith(ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{u}}, at)
		return err
	}
	for i := range 10 {
		if err := join(fmt.Sprintf("c%d", i), time.Second, base); err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
	}
	if n := client.ZCard(ctx, ux).Val(); n != 10 {
		t.Fatalf("%d counts kept, want 10", n)
	}
	// Still counted a millisecond before they end, whatever Redis' clock.
	if err := join("c3", time.Minute, base.Add(time.Second-time.Millisecond)); waitroom.ErrorCode(err) != waitroom.CodeChallengeUsed {
		t.Fatalf("a used challenge before its end: %v, want %s", err, waitroom.CodeChallengeUsed)
	}
	// Once they ended, a join that spends drops them, and the same ID counts afresh.
	if err := join("c3", time.Minute, base.Add(time.Second)); err != nil {
		t.Fatalf("a challenge ID again after its count ended: %v", err)
	}
	if n, m := client.ZCard(ctx, ux).Val(), client.HLen(ctx, uc).Val(); n != 1 || m != 1 {
		t.Fatalf("%d and %d counts kept after they ended, want 1", n, m)
	}
	if err := s.DeleteRoom(ctx, "r", true, base.Add(2*time.Second)); err != nil {
		t.Fatalf("DeleteRoom: %v", err)
	}
	if n := client.Exists(ctx, uc, ux).Val(); n != 0 {
		t.Fatalf("%d token keys outlive their room", n)
	}
}
