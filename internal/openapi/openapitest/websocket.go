package openapitest

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// frames checks the messages of a WebSocket as the server sends them: each
// text message against the schema the 101 answer's x-websocket-message
// names. Server frames are not masked; compressed messages (RSV1) are not
// checked.
type frames struct {
	s      *spec
	schema string // a JSON pointer, or "" when the document names none
	buf    []byte
	msg    []byte
	text   bool // the message being assembled is text
	skip   bool // ... and compressed
	broken bool
}

// newFrames returns the checker of the messages of a WebSocket opened by
// the 101 answer at response (a pointer into the document).
func (s *spec) newFrames(response string) (*frames, string) {
	obj, _, err := s.at(response)
	if err != nil {
		return nil, err.Error()
	}
	ref, _ := obj["x-websocket-message"].(string)
	if ref == "" {
		return nil, fmt.Sprintf("%s names no x-websocket-message", response)
	}
	return &frames{s: s, schema: strings.TrimPrefix(ref, "#")}, ""
}

// feed takes the next bytes the server sent and returns the problems of
// the messages they complete.
func (f *frames) feed(b []byte) []string {
	if f.broken {
		return nil
	}
	f.buf = append(f.buf, b...)
	var found []string
	for {
		if len(f.buf) < 2 {
			return found
		}
		fin, rsv1, op := f.buf[0]&0x80 != 0, f.buf[0]&0x40 != 0, f.buf[0]&0x0f
		masked, n := f.buf[1]&0x80 != 0, uint64(f.buf[1]&0x7f)
		hdr := 2
		switch n {
		case 126:
			if len(f.buf) < 4 {
				return found
			}
			n, hdr = uint64(binary.BigEndian.Uint16(f.buf[2:4])), 4
		case 127:
			if len(f.buf) < 10 {
				return found
			}
			n, hdr = binary.BigEndian.Uint64(f.buf[2:10]), 10
		}
		if masked {
			hdr += 4
		}
		if n > 1<<26 {
			f.broken = true
			return append(found, fmt.Sprintf("websocket: a frame of %d bytes", n))
		}
		if uint64(len(f.buf)) < uint64(hdr)+n {
			return found
		}
		payload := f.buf[hdr : uint64(hdr)+n]
		if masked {
			key := f.buf[hdr-4 : hdr]
			p := make([]byte, len(payload))
			for i := range payload {
				p[i] = payload[i] ^ key[i%4]
			}
			payload = p
		}
		switch op {
		case 0x1, 0x2: // text, binary: a new message
			f.text, f.skip, f.msg = op == 0x1, rsv1, append(f.msg[:0], payload...)
		case 0x0: // continuation
			f.msg = append(f.msg, payload...)
		default: // control frames: ping, pong, close
			f.buf = f.buf[uint64(hdr)+n:]
			continue
		}
		f.buf = f.buf[uint64(hdr)+n:]
		if !fin {
			continue
		}
		if !f.text {
			found = append(found, "websocket: a binary message; the document describes text messages")
			continue
		}
		if f.skip {
			continue
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(f.msg)))
		if err != nil {
			found = append(found, fmt.Sprintf("websocket: a message that is not JSON: %v: %.200s", err, f.msg))
			continue
		}
		var o outcome
		f.s.validate(&o, f.schema, v)
		for _, p := range o.problems {
			found = append(found, fmt.Sprintf("websocket: message %.300s: %s", f.msg, p))
		}
	}
}
