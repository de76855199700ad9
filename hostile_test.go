package waitroom_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// identityRefused are characters an identity string (a key, a contact) must
// not hold: each would be invisible, reorder or break the text an operator
// reads in the console, or is no character at all.
var identityRefused = map[string]rune{
	"NUL (Cc)":                                  0x00,
	"BEL (Cc)":                                  0x07,
	"DEL (Cc)":                                  0x7f,
	"NEL (Cc)":                                  0x85,
	"no-break space (Zs)":                       0xa0,
	"soft hyphen (Cf)":                          0xad,
	"ogham space mark (Zs)":                     0x1680,
	"Mongolian vowel separator (Cf)":            0x180e,
	"en quad (Zs)":                              0x2000,
	"thin space (Zs)":                           0x2009,
	"hair space (Zs)":                           0x200a,
	"zero width space (Cf)":                     0x200b,
	"zero width non-joiner (Cf)":                0x200c,
	"zero width joiner (Cf)":                    0x200d,
	"left-to-right mark (Cf)":                   0x200e,
	"right-to-left mark (Cf)":                   0x200f,
	"line separator (Zl)":                       0x2028,
	"paragraph separator (Zp)":                  0x2029,
	"left-to-right embedding (Cf)":              0x202a,
	"right-to-left override (Cf)":               0x202e,
	"narrow no-break space (Zs)":                0x202f,
	"medium mathematical space (Zs)":            0x205f,
	"word joiner (Cf)":                          0x2060,
	"invisible separator (Cf)":                  0x2063,
	"left-to-right isolate (Cf)":                0x2066,
	"pop directional isolate (Cf)":              0x2069,
	"ideographic space (Zs)":                    0x3000,
	"Hangul filler (Lo, default ignorable)":     0x3164,
	"Hangul choseong filler (Lo, ignorable)":    0x115f,
	"halfwidth Hangul filler (Lo, ignorable)":   0xffa0,
	"combining grapheme joiner (Mn, ignorable)": 0x34f,
	"variation selector 16 (Mn)":                0xfe0f,
	"braille pattern blank (So, blank)":         0x2800,
	"byte order mark (Cf)":                      0xfeff,
	"interlinear annotation anchor (Cf)":        0xfff9,
	"replacement character":                     0xfffd,
	"noncharacter U+FFFE (Cn)":                  0xfffe,
	"noncharacter U+FDD0 (Cn)":                  0xfdd0,
	"noncharacter U+1FFFF (Cn)":                 0x1ffff,
	"unassigned U+0378 (Cn)":                    0x378,
	"private use U+E000 (Co)":                   0xe000,
	"private use plane 15 (Co)":                 0xf0000,
	"tag space (Cf)":                            0xe0020,
	"language tag (Cf)":                         0xe0001,
	"Arabic letter mark (Cf)":                   0x61c,
	"shorthand format control (Cf)":             0x1bca0,
}

// identityAccepted are strings every identity check must keep accepting.
var identityAccepted = []string{
	"u1", "user@example.com", "a b", " ", "日本語", "ключ ✓", "€🙂", "Zoë", "x:{r}:y",
	"e\u0301",          // e and a combining acute accent (Mn)
	"עברית", "العربية", // right-to-left letters are letters, not controls
	"👍🏽", // an emoji with a skin tone modifier (Sk)
	"#1 (a|b) <c> [d] \"e\" 'f' \\g",
}

// TestIdentityRefusesInvisibleAndFormatCharacters: a key or contact that
// holds an invisible, format, separator or non-character is refused
// (issue 17: "a\u202eb" was accepted), wherever the character stands.
func TestIdentityRefusesInvisibleAndFormatCharacters(t *testing.T) {
	for name, r := range identityRefused {
		for _, s := range []string{string(r), "a" + string(r) + "b", "ab" + string(r)} {
			if err := waitroom.CheckKey(s); waitroom.ErrorCode(err) != waitroom.CodeInvalidKey {
				t.Errorf("CheckKey with %s (%U) in %q: got %v, want %s", name, r, s, err, waitroom.CodeInvalidKey)
			}
			if err := waitroom.CheckContact(s); waitroom.ErrorCode(err) != waitroom.CodeInvalidRequest {
				t.Errorf("CheckContact with %s (%U) in %q: got %v, want %s", name, r, s, err, waitroom.CodeInvalidRequest)
			}
		}
		if waitroom.Printable(string(r)) {
			t.Errorf("Printable(%s %U) = true", name, r)
		}
	}
	for _, s := range identityAccepted {
		if err := waitroom.CheckKey(s); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", s, err)
		}
		if err := waitroom.CheckContact(s); err != nil {
			t.Errorf("CheckContact(%q) = %v, want nil", s, err)
		}
		if !waitroom.Printable(s) {
			t.Errorf("Printable(%q) = false", s)
		}
	}
	// Invalid UTF-8 is no text at all.
	for _, s := range []string{"\xff", "a\xc3", "\xed\xa0\x80"} {
		if waitroom.CheckKey(s) == nil || waitroom.CheckContact(s) == nil || waitroom.Printable(s) {
			t.Errorf("invalid UTF-8 %q accepted", s)
		}
	}
}

// TestCheckJoinRefusesInvisibleKeys: the stores' own check of a join
// (CheckJoin) applies the same rule to the key and the contact.
func TestCheckJoinRefusesInvisibleKeys(t *testing.T) {
	for _, r := range []rune{0x202e, 0x200b, 0xa0} {
		s := fmt.Sprintf("a%cb", r)
		if err := waitroom.CheckJoin(waitroom.JoinRequest{Key: s}, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)); waitroom.ErrorCode(err) != waitroom.CodeInvalidKey {
			t.Errorf("CheckJoin key %q: got %v, want %s", s, err, waitroom.CodeInvalidKey)
		}
		if err := waitroom.CheckJoin(waitroom.JoinRequest{Contact: s}, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)); waitroom.ErrorCode(err) != waitroom.CodeInvalidRequest {
			t.Errorf("CheckJoin contact %q: got %v, want %s", s, err, waitroom.CodeInvalidRequest)
		}
	}
}
