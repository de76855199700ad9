package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/web"
)

// everySetting declares rooms using every setting of a room's
// configuration, so that applying the file twice shows whether each store
// gives back what it was given (else the second application would write,
// and audit, a change that is none).
const everySetting = `rooms:
  shop:
    mode: auto
    capacity: 5
    rate_per_minute: 600
    active_timeout: 2m
    max_session: 1h
    waiting_timeout: 90s
    grace: 10s
    target_url: https://shop.example/checkout
    return_origins: [https://shop.example, https://www.shop.example]
    opens_at: "2030-06-01T18:00:00.123Z"
    closes_at: 2030-06-01T23:00:00+02:00
    inventory: 100
    tiers: [{name: presale, share: 0.5}, {name: general}]
    tier_policy: weighted
    invite_only: true
    invite_keys: ["11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="]
    challenge: pow
    challenge_min: 1000
    challenge_max: 50000
    hold_places: true
    claim_window: 5m
    notify_at: 10
  desk:
    mode: manual
    paused: true
  plain:
`

func roomsServer(t *testing.T, storeURL, text string, mutate ...func(*Config)) (*Server, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "rooms.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.DataDir = t.TempDir()
	cfg.StoreURL = storeURL
	cfg.RoomsFile = file
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, file
}

func TestApplyRoomsTwiceWritesNothingTheSecondTime(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"memory": func(*testing.T) string { return "memory" },
		"sqlite": func(*testing.T) string { return "" },
		"redis":  func(t *testing.T) string { return "redis://" + redistest.Server(t) + "/0" },
	}
	for name, storeURL := range stores {
		t.Run(name, func(t *testing.T) {
			srv, _ := roomsServer(t, storeURL(t), everySetting)
			ctx := context.Background()
			for _, room := range []string{"shop", "desk", "plain"} {
				e, _, err := srv.Store().Audit(ctx, room, "", waitroom.Page{Limit: 10})
				if err != nil || len(e) != 1 || e[0].Actor != waitroom.AuditActorFile || e[0].Action != waitroom.AuditConfig {
					t.Fatalf("audit of %s after start: %+v %v, want its creation by file", room, e, err)
				}
			}
			rep, err := srv.ApplyRooms(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Created) != 0 || len(rep.Changed) != 0 || rep.Unchanged != 3 {
				t.Errorf("second application: %s; want 3 unchanged and nothing written", rep)
			}
			desk, err := srv.Store().Room(ctx, "desk")
			if err != nil || !desk.Paused || desk.Mode != waitroom.ModeManual {
				t.Errorf("desk: %+v %v, want paused and manual", desk, err)
			}
		})
	}
}

func TestApplyRoomsPruneSparesTheServersOwnRooms(t *testing.T) {
	srv, file := roomsServer(t, "memory", "rooms: {}\n", func(c *Config) { c.Demo = true })
	ctx := context.Background()
	now := srv.cfg.Clock.Now()
	for _, room := range []string{"extra", "busy"} {
		if _, _, err := srv.Store().PutRoom(ctx, room, waitroom.DefaultConfig(), now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.Store().Join(ctx, "busy", "", now); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("prune: true\nrooms: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := srv.ApplyRooms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.Deleted, " ") != "extra" || strings.Join(rep.Kept, " ") != "busy" {
		t.Errorf("prune: %s; want extra deleted, busy kept", rep)
	}
	rooms, err := srv.Store().Rooms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rooms {
		names = append(names, r.Name)
	}
	if want := "busy default " + web.DemoRoom; strings.Join(names, " ") != want {
		t.Errorf("rooms after prune: %v, want %s", names, want)
	}
	if !strings.Contains(rep.String(), "deleted 1 (extra)") {
		t.Errorf("report %q does not say what was deleted", rep)
	}
}

func TestApplyRoomsBadFileChangesNothing(t *testing.T) {
	srv, file := roomsServer(t, "memory", "rooms:\n  a: {capacity: 1}\n")
	if err := os.WriteFile(file, []byte("rooms:\n  a: {capacity: 2}\n  b: {capacity: -1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.ApplyRooms(context.Background()); err == nil || !strings.Contains(err.Error(), `room "b": capacity:`) {
		t.Fatalf("ApplyRooms with a bad room: %v, want an error naming room b and capacity", err)
	}
	if a, _ := srv.Store().Room(context.Background(), "a"); a.Capacity != 1 {
		t.Errorf("room a after a bad file: capacity %d, want 1 (nothing applied)", a.Capacity)
	}
	srv2, err := New(context.Background(), testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if _, err := srv2.ApplyRooms(context.Background()); err == nil {
		t.Error("ApplyRooms without a rooms file: nil error")
	}
}

// TestRoomsFileDeclaresTheDemoRoom: a room the file declares is the
// file's; --demo leaves it as it is.
func TestRoomsFileDeclaresTheDemoRoom(t *testing.T) {
	srv, _ := roomsServer(t, "memory", "rooms:\n  "+web.DemoRoom+": {capacity: 9}\n", func(c *Config) { c.Demo = true })
	r, err := srv.Store().Room(context.Background(), web.DemoRoom)
	if err != nil || r.Capacity != 9 || r.TargetURL != "" {
		t.Errorf("demo room declared by the file: %+v %v, want the file's capacity 9 and no target", r, err)
	}
}
