package waitroom_test

import (
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

func FuzzVerifyDraw(f *testing.F) {
	seed := testSeed()
	valid := drawnRecord(seed, []string{
		waitroom.EntryForSecret([16]byte{1}), waitroom.EntryForSecret([16]byte{2}),
		waitroom.EntryForKey("drop", "alice"), waitroom.EntryForKey("drop", "bob"), "s:x",
	}, 3)
	if err := waitroom.VerifyDraw(valid); err != nil {
		f.Fatalf("VerifyDraw of the valid seed record: %v", err)
	}
	encode := func(d waitroom.DrawRecord) []byte {
		b, err := json.Marshal(d)
		if err != nil {
			f.Fatalf("json.Marshal: %v", err)
		}
		return b
	}
	// The valid record must survive its JSON form, as the fuzz body sees it.
	var back waitroom.DrawRecord
	if err := json.Unmarshal(encode(valid), &back); err != nil {
		f.Fatalf("json.Unmarshal of the valid record: %v", err)
	}
	if err := waitroom.VerifyDraw(back); err != nil {
		f.Fatalf("VerifyDraw of the valid record after JSON: %v", err)
	}
	f.Add(encode(valid))
	f.Add(encode(drawnRecord(seed, nil, 1)))
	f.Add(encode(drawnRecord(seed, []string{"s:only"}, 0)))
	broken := func(change func(d *waitroom.DrawRecord)) []byte {
		d := valid
		d.Entries = slices.Clone(valid.Entries)
		change(&d)
		return encode(d)
	}
	f.Add(broken(func(d *waitroom.DrawRecord) { d.Entries[2].Value = strings.Repeat("0", 64) }))
	f.Add(broken(func(d *waitroom.DrawRecord) { d.Entries[0], d.Entries[1] = d.Entries[1], d.Entries[0] }))
	f.Add(broken(func(d *waitroom.DrawRecord) { d.Entries[4].Ticket = -1 }))
	f.Add(broken(func(d *waitroom.DrawRecord) { d.Entries[1] = d.Entries[0] }))
	f.Add(broken(func(d *waitroom.DrawRecord) { d.Entries = d.Entries[:4] }))
	f.Add(broken(func(d *waitroom.DrawRecord) { d.Digest = "" }))
	// The seed in capitals is the same seed and verifies.
	f.Add(broken(func(d *waitroom.DrawRecord) { d.Seed = strings.ToUpper(d.Seed) }))
	f.Add(broken(func(d *waitroom.DrawRecord) { d.Seed = d.Seed[:63] }))
	f.Add(broken(func(d *waitroom.DrawRecord) { d.Drawn = false }))
	f.Add(broken(func(d *waitroom.DrawRecord) { d.FirstTicket = 1<<63 - 2 }))
	for _, s := range []string{"", "null", "{}", "[]", `{"drawn":true}`, `{"drawn":true,"entrants":-1}`, `{"entries":[{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d waitroom.DrawRecord
		if err := json.Unmarshal(data, &d); err != nil {
			return
		}
		err := waitroom.VerifyDraw(d)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("VerifyDraw(%s) failed with an empty message", data)
			}
			return
		}
		// Whatever verifies is exactly what DrawOrder makes of its entries.
		if !d.Drawn || d.Entrants != len(d.Entries) {
			t.Fatalf("VerifyDraw accepted %s: drawn %v, %d entrants, %d entries", data, d.Drawn, d.Entrants, len(d.Entries))
		}
		s, err := waitroom.ParseDrawSeed(d.Seed)
		if err != nil {
			t.Fatalf("VerifyDraw accepted seed %q, which ParseDrawSeed refuses: %v", d.Seed, err)
		}
		if s.Commitment() != d.Commitment {
			t.Fatalf("VerifyDraw accepted commitment %q for seed %q", d.Commitment, d.Seed)
		}
		names := make([]string, len(d.Entries))
		for i, e := range d.Entries {
			names[i] = e.Entry
		}
		slices.Reverse(names)
		if want := waitroom.DrawOrder(s, names, d.FirstTicket); !slices.Equal(d.Entries, want) {
			t.Fatalf("VerifyDraw accepted %s, but DrawOrder gives %+v", data, want)
		}
		if got := waitroom.DrawDigest(d.Entries); got != d.Digest {
			t.Fatalf("VerifyDraw accepted digest %q, the entries' is %q", d.Digest, got)
		}
	})
}

func FuzzParseDrawSeed(f *testing.F) {
	f.Add("")
	f.Add(testSeed().String())
	f.Add(strings.ToUpper(testSeed().String()))
	f.Add(testSeed().String()[:63])
	f.Add(testSeed().String() + "0")
	f.Add(strings.Repeat("g", 64))
	f.Add(strings.Repeat("00", 31) + "0\n0")
	f.Fuzz(func(t *testing.T, v string) {
		s, err := waitroom.ParseDrawSeed(v)
		// Differential check against encoding/hex.
		raw, hexErr := hex.DecodeString(v)
		hexOK := hexErr == nil && len(raw) == waitroom.DrawSeedLen
		if hexOK != (err == nil) {
			t.Fatalf("ParseDrawSeed(%q) error = %v, but encoding/hex accepts it as a seed: %v", v, err, hexOK)
		}
		if err != nil {
			if s != (waitroom.DrawSeed{}) {
				t.Fatalf("ParseDrawSeed(%q) failed but returned seed %s", v, s)
			}
			return
		}
		if !slices.Equal(s[:], raw) {
			t.Fatalf("ParseDrawSeed(%q) = %s, want %x", v, s, raw)
		}
		if !strings.EqualFold(s.String(), v) {
			t.Fatalf("ParseDrawSeed(%q).String() = %s, want the same digits", v, s)
		}
		if again, err := waitroom.ParseDrawSeed(s.String()); err != nil || again != s {
			t.Fatalf("ParseDrawSeed(%s) = %s, %v; want the seed back", s, again, err)
		}
	})
}
