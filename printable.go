package waitroom

import (
	"unicode"
	"unicode/utf8"
)

// The rule for identity text (keys, contacts): what an operator reads in
// the console, a log or a webhook must be what was sent, so such text holds
// only characters that show. Printable and PrintableRune apply it.
//
// A character is allowed when it is the ASCII space U+0020 or of Unicode's
// general categories L (letters), M (marks), N (numbers), P (punctuation)
// or S (symbols), and is not one of these, which are in those categories
// but show nothing or stand for something else:
//   - U+FFFD, the replacement character: JSON decoding makes it of invalid
//     UTF-8, which must not be stored as if it were what was sent;
//   - the default-ignorable code points of those categories (Unicode's
//     Other_Default_Ignorable_Code_Point and Variation_Selector: Hangul
//     fillers such as U+3164, the combining grapheme joiner U+034F,
//     variation selectors such as U+FE0F);
//   - U+2800, the blank braille pattern, which renders as a space.
//
// So every control (Cc), format character (Cf: the bidi controls such as
// U+202E, zero-width characters such as U+200B, U+FEFF, tags), separator
// but the ASCII space (Zs such as U+00A0 and U+3000, Zl U+2028, Zp U+2029),
// private-use character (Co), surrogate (Cs) and unassigned code point (Cn,
// noncharacters such as U+FFFE included) is refused. Which code points are
// assigned is Unicode's version of the Go release the server is built with.

// PrintableRune reports whether r may appear in identity text.
func PrintableRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 0x20 && r < 0x7f
	}
	switch {
	case r == utf8.RuneError, r == 0x2800:
		return false
	case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S):
		// Cc, Cf, Co, Cs, Cn and every separator (Z) but U+0020.
		return false
	case unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector):
		return false
	}
	return true
}

// Printable reports whether s is valid UTF-8 of characters PrintableRune
// allows (the empty string is printable; callers bound the length).
func Printable(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !PrintableRune(r) { // invalid UTF-8 decodes as U+FFFD
			return false
		}
		i += n
	}
	return true
}
