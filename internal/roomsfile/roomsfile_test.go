package roomsfile_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/roomsfile"
)

func TestParseYAML(t *testing.T) {
	f, err := roomsfile.Parse("rooms.yaml", []byte(`
prune: true
rooms:
  shop:
    capacity: 5
    inventory: 100
    target_url: https://shop.example/checkout
    active_timeout: 2m
    opens_at: 2030-06-01T18:00:00Z
  plain:
  empty: {}
  paused-one:
    paused: false
`))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Prune || len(f.Rooms) != 4 {
		t.Fatalf("prune %v, %d rooms; want true and 4", f.Prune, len(f.Rooms))
	}
	// Sorted by name.
	names := []string{f.Rooms[0].Name, f.Rooms[1].Name, f.Rooms[2].Name, f.Rooms[3].Name}
	if strings.Join(names, " ") != "empty paused-one plain shop" {
		t.Errorf("rooms in order %v", names)
	}
	shop := f.Rooms[3].Config
	want := waitroom.DefaultConfig()
	want.Capacity, want.TargetURL, want.ActiveTimeout = 5, "https://shop.example/checkout", waitroom.Duration(2*time.Minute)
	inv := int64(100)
	want.Inventory = &inv
	want.OpensAt = time.Date(2030, 6, 1, 18, 0, 0, 0, time.UTC)
	if !shop.Equal(want) {
		t.Errorf("shop = %+v, want %+v", shop, want)
	}
	if f.Rooms[3].SetsPaused || !f.Rooms[1].SetsPaused {
		t.Errorf("SetsPaused: shop %v, paused-one %v; want false, true", f.Rooms[3].SetsPaused, f.Rooms[1].SetsPaused)
	}
	for _, r := range []roomsfile.Room{f.Rooms[0], f.Rooms[2]} {
		if !r.Config.Equal(waitroom.DefaultConfig()) {
			t.Errorf("room %s = %+v, want the default configuration", r.Name, r.Config)
		}
	}
}

func TestParseJSON(t *testing.T) {
	f, err := roomsfile.Parse("rooms.json", []byte(`{"rooms":{"shop":{"capacity":7,"mode":"manual"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Prune || len(f.Rooms) != 1 || f.Rooms[0].Config.Capacity != 7 || f.Rooms[0].Config.Mode != waitroom.ModeManual {
		t.Errorf("parsed %+v", f)
	}
}

func TestParseExample(t *testing.T) {
	data, err := os.ReadFile("../../examples/rooms.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := roomsfile.Parse("examples/rooms.yaml", data)
	if err != nil {
		t.Fatalf("the example does not parse: %v", err)
	}
	if len(f.Rooms) == 0 || f.Prune {
		t.Errorf("example: %d rooms, prune %v; want some rooms and no prune", len(f.Rooms), f.Prune)
	}
}

func TestParseErrorsNameFileRoomAndSetting(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      `rooms.yaml: the file is empty`,
		"prune: true\n":                         `rooms.yaml: no "rooms" key`,
		"rooms: {}\nprun: true\n":               `rooms.yaml: unknown key "prun"`,
		"rooms: {}\nprune: maybe\n":             `rooms.yaml: prune: must be true or false`,
		"rooms: [a, b]\n":                       `rooms.yaml: rooms: must be a map`,
		"rooms:\n":                              `rooms.yaml: rooms: must be a map`,
		"- a\n":                                 `rooms.yaml: the file must be a map`,
		"rooms:\n  shop:\n    capacity: -1\n":   `rooms.yaml: room "shop": capacity: must be between 0 and 1000000000`,
		"rooms:\n  shop:\n    capacity: lots\n": `rooms.yaml: room "shop": capacity: must be a number`,
		"rooms:\n  shop:\n    capactiy: 5\n":    `rooms.yaml: room "shop": capactiy: unknown setting`,
		"rooms:\n  shop:\n    active_timeout: 5\n":   `rooms.yaml: room "shop": active_timeout: `,
		"rooms:\n  shop:\n    grace: soon\n":         `rooms.yaml: room "shop": grace: `,
		"rooms:\n  shop:\n    opens_at: 2030\n":      `rooms.yaml: room "shop": opens_at: `,
		"rooms:\n  shop:\n    target_url: ftp://x\n": `rooms.yaml: room "shop": target_url: must be an absolute http(s) URL`,
		"rooms:\n  shop:\n    inventory: -3\n":       `rooms.yaml: room "shop": inventory: must be between`,
		"rooms:\n  shop:\n    capacity:\n":           `rooms.yaml: room "shop": capacity: has no value`,
		"rooms:\n  shop: 5\n":                        `rooms.yaml: room "shop": must be a map of settings`,
		"rooms:\n  Shop!: {}\n":                      `rooms.yaml: room "Shop!": not a valid room name`,
		"rooms:\n  shop: {}\n  shop: {}\n":           `rooms.yaml: `, // a room twice
		"rooms: {shop: {capacity: 1}\n":              `rooms.yaml: `, // YAML that does not parse
	} {
		_, err := roomsfile.Parse("rooms.yaml", []byte(in))
		if err == nil {
			t.Errorf("Parse(%q) = nil error, want %q…", in, want)
			continue
		}
		if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) = %q, want one line starting %q", in, err, want)
		}
	}
	// A thousand problems are reported as the first few and a count.
	dup := "rooms:\n" + strings.Repeat("  a: {}\n", 1000)
	if _, err := roomsfile.Parse("dup.yaml", []byte(dup)); err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "and 996 more") {
		t.Errorf("Parse of a room given 1000 times = %v, want a short line with a count", err)
	}
	if _, err := roomsfile.Parse("big.yaml", make([]byte, roomsfile.MaxSize+1)); err == nil || !strings.HasPrefix(err.Error(), "big.yaml: the file is") {
		t.Errorf("Parse of an oversized file = %v", err)
	}
}

// FuzzParse: any input is either a file whose every room is a name and a
// configuration the API would accept, or an error on one line that starts
// with the file's name. Never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"rooms: {}\n",
		"prune: true\nrooms:\n  shop:\n    capacity: 5\n    inventory: 100\n    target_url: https://shop.example/x\n",
		`{"rooms":{"a":{"mode":"manual","tiers":["vip"],"tier_policy":"strict"}}}`,
		"rooms:\n  a: &x {capacity: 1}\n  b: *x\n",
		"rooms:\n  a:\n    opens_at: 2030-06-01T18:00:00Z\n    closes_at: 2030-06-01T17:00:00Z\n",
		"rooms:\n  a:\n    paused: yes\n",
		"rooms:\n  1: {}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := roomsfile.Parse("r.yaml", data)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "r.yaml: ") {
				t.Fatalf("error %q does not start with the file's name", msg)
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range file.Rooms {
			if !waitroom.ValidRoomName(r.Name) || seen[r.Name] {
				t.Fatalf("room name %q invalid or repeated", r.Name)
			}
			seen[r.Name] = true
			if err := r.Config.Validate(); err != nil {
				t.Fatalf("room %q: configuration the API would refuse: %v", r.Name, err)
			}
		}
	})
}
