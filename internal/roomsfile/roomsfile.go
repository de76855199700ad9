// Package roomsfile reads the rooms file of `waitroom serve --rooms`: the
// rooms a deployment declares, each with its configuration, in YAML or
// JSON, so that a room set-up can live in a repository next to the rest of
// a deployment.
//
//	prune: false          # true: delete the rooms the file does not name
//	rooms:
//	  shop:
//	    capacity: 5
//	    inventory: 100
//	    target_url: https://shop.example/checkout
//
// Each room's settings are the body of PUT /v1/rooms/{room}, read by the
// same waitroom.ParseRoomConfig, so the file and the API cannot disagree on
// what a setting means. YAML is turned into JSON first (sigs.k8s.io/yaml);
// a JSON file is YAML already.
//
// Parse checks the whole file before anything is applied: a file with one
// bad room is refused whole, and every error names the file, the room and
// the setting.
package roomsfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/waitroom/waitroom"
)

// MaxSize is the largest rooms file read, in bytes: far more than any set
// of rooms needs, small enough that a wrong path (a log, a database) is
// refused rather than parsed.
const MaxSize = 1 << 20

// File is a parsed rooms file.
type File struct {
	// Prune deletes the rooms the file does not name (see the server for
	// which are spared).
	Prune bool
	// Rooms are the declared rooms, ordered by name.
	Rooms []Room
}

// Room is one declared room.
type Room struct {
	Name   string
	Config waitroom.RoomConfig
	// SetsPaused says whether the file names "paused". When it does not,
	// an existing room keeps its own pause: pausing is what operators do
	// to a live room, and reloading the file for another change must not
	// resume a room paused in an emergency.
	SetsPaused bool
}

// topKeys are the keys a rooms file may have.
var topKeys = []string{"prune", "rooms"}

// Parse reads a rooms file's data; name (the file's name, as the operator
// wrote it) starts every error message, which names the room and the
// setting at fault: `rooms.yaml: room "shop": capacity: must be …`.
func Parse(name string, data []byte) (*File, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxSize {
		return nil, fail("the file is %d bytes; a rooms file is at most %d", len(data), MaxSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fail(`the file is empty; it needs "rooms:" (write "rooms: {}" for none)`)
	}
	// Strict: a key given twice (two rooms of one name) is an error, not
	// the last one silently winning.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fail("%s", oneLine(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil || top == nil {
		return nil, fail(`the file must be a map with "rooms" (and optionally "prune")`)
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if !slices.Contains(topKeys, k) {
			return nil, fail(`unknown key %q; a rooms file has "rooms" and optionally "prune"`, k)
		}
	}
	f := &File{}
	if p, ok := top["prune"]; ok {
		if err := json.Unmarshal(p, &f.Prune); err != nil || isNull(p) {
			return nil, fail("prune: must be true or false")
		}
	}
	// "rooms" is required, even when empty, so that an empty or cut-off
	// file with prune: true cannot delete every room.
	r, ok := top["rooms"]
	if !ok {
		return nil, fail(`no "rooms" key; write "rooms: {}" to declare none`)
	}
	var rooms map[string]json.RawMessage
	if err := json.Unmarshal(r, &rooms); err != nil || rooms == nil {
		return nil, fail("rooms: must be a map of room names to their settings")
	}
	for _, room := range slices.Sorted(maps.Keys(rooms)) {
		c, err := parseRoom(room, rooms[room])
		if err != nil {
			return nil, fail("room %q: %s", room, err)
		}
		f.Rooms = append(f.Rooms, c)
	}
	return f, nil
}

// parseRoom reads one room's settings (null or {} is the default
// configuration, as an empty PUT body is).
func parseRoom(name string, body json.RawMessage) (Room, error) {
	if !waitroom.ValidRoomName(name) {
		return Room{}, errors.New("not a valid room name: 1 to 64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	}
	var fields map[string]json.RawMessage
	if !isNull(body) {
		if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
			return Room{}, errors.New("must be a map of settings such as capacity: 5")
		}
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	for k, v := range fields {
		// A setting written without a value (capacity:) is null, which
		// the API would read as absent; in a file it is more likely a
		// mistake than a wish for the default.
		if isNull(v) {
			return Room{}, fmt.Errorf("%s: has no value (remove the line for the default)", k)
		}
	}
	js, err := json.Marshal(fields)
	if err != nil {
		return Room{}, fmt.Errorf("settings: %w", err)
	}
	cfg, err := waitroom.ParseRoomConfig(js)
	if err != nil {
		return Room{}, errors.New(fieldMessage(fields, err))
	}
	_, setsPaused := fields["paused"]
	return Room{Name: name, Config: cfg, SetsPaused: setsPaused}, nil
}

// fieldMessage turns ParseRoomConfig's error into "field: problem",
// finding the field when the message does not start with it.
func fieldMessage(fields map[string]json.RawMessage, err error) string {
	msg := err.Error()
	var we *waitroom.Error
	if errors.As(err, &we) && we.Message != "" {
		msg = we.Message
	}
	msg = strings.TrimPrefix(strings.ReplaceAll(msg, "a JSON ", "a "), "Invalid value: ")
	if f, ok := strings.CutPrefix(msg, "Unknown field "); ok {
		return fmt.Sprintf("%s: unknown setting (the settings are those of PUT /v1/rooms/{room}; see the README's \"Room configuration\")", strings.Trim(f, `".`))
	}
	if rest, ok := strings.CutPrefix(msg, "Field "); ok {
		if f, problem, ok := strings.Cut(rest, " "); ok {
			return strings.Trim(f, `"`) + ": " + problem
		}
	}
	keys := slices.Sorted(maps.Keys(fields))
	for _, k := range keys {
		if p, ok := strings.CutPrefix(msg, k+" "); ok && !strings.HasPrefix(p, "and ") {
			return k + ": " + p
		}
	}
	// A value of the wrong form (a duration, a time) is an error of its
	// field alone: find it by reading each setting by itself.
	if code := waitroom.ErrorCode(err); code == waitroom.CodeInvalidJSON || strings.HasPrefix(msg, "opens_at and closes_at") {
		for _, k := range keys {
			one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
			if _, err := waitroom.ParseRoomConfig(one); waitroom.ErrorCode(err) == code {
				return k + ": " + msg
			}
		}
	}
	return msg
}

// oneLine joins a multi-line message (the YAML parser's list of errors)
// into one line, so that a refused start is one clear line; past the
// first few problems it says how many more there are.
func oneLine(msg string) string {
	const most = 4 // the parser's heading and three problems
	var parts []string
	n := 0
	for l := range strings.SplitSeq(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if n++; n <= most {
				parts = append(parts, strings.TrimSuffix(l, ":"))
			}
		}
	}
	if n > most {
		parts = append(parts, fmt.Sprintf("and %d more", n-most))
	}
	return strings.Join(parts, ": ")
}

// isNull reports whether a JSON value is null.
func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }
