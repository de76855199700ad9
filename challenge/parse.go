package challenge

import (
	"unicode/utf16"
	"unicode/utf8"
)

// solution holds the fields of a solution's JSON object, as slices of the
// buffer it was parsed from (strings unescaped in place).
type solution struct {
	algorithm, challenge, salt, signature []byte
	number                                []byte // canonical decimal digits
}

// maxDepth bounds the nesting of unknown fields' values.
const maxDepth = 32

// The fields of a solution, as bits of a set.
const (
	fAlgorithm = 1 << iota
	fChallenge
	fNumber
	fSalt
	fSignature
	fAll = fAlgorithm | fChallenge | fNumber | fSalt | fSignature
)

// parseSolution reads b, one JSON object with at least the five fields of a
// solution, and reports whether it could. It is a strict parser
// for this one shape, several times faster than encoding/json: each of the
// five fields must appear exactly once with its type (strings, and for
// number a non-negative integer without fraction, exponent or leading
// zeros), and the text must be valid JSON. Other fields are skipped (the
// ALTCHA widget adds "took"). Strings are unescaped in place, so b is
// modified. The solution is returned by value, not stored through a
// pointer, so that b does not escape and Verify's buffer stays on the stack.
func parseSolution(b []byte) (s solution, ok bool) {
	p := parser{b: b}
	p.ws()
	if !p.eat('{') {
		return s, false
	}
	p.ws()
	seen := 0
	if !p.eat('}') {
		for {
			if p.peek() != '"' {
				return s, false
			}
			var key []byte
			key, ok = p.str()
			if !ok {
				return s, false
			}
			p.ws()
			if !p.eat(':') {
				return s, false
			}
			p.ws()
			var f int
			switch string(key) {
			case "algorithm":
				f = fAlgorithm
			case "challenge":
				f = fChallenge
			case "number":
				f = fNumber
			case "salt":
				f = fSalt
			case "signature":
				f = fSignature
			}
			if seen&f != 0 {
				return s, false // a repeated field: which one counts is ambiguous
			}
			seen |= f
			var v []byte
			switch {
			case f == fNumber:
				v, ok = p.integer()
			case f != 0:
				if p.peek() != '"' {
					return s, false
				}
				v, ok = p.str()
			default:
				ok = p.skip(0)
			}
			if !ok {
				return s, false
			}
			switch f {
			case fAlgorithm:
				s.algorithm = v
			case fChallenge:
				s.challenge = v
			case fNumber:
				s.number = v
			case fSalt:
				s.salt = v
			case fSignature:
				s.signature = v
			}
			p.ws()
			if p.eat('}') {
				break
			}
			if !p.eat(',') {
				return s, false
			}
			p.ws()
		}
	}
	p.ws()
	return s, p.i == len(p.b) && seen == fAll
}

// parser reads JSON from b at i.
type parser struct {
	b []byte
	i int
}

// peek returns the next byte, or 0 at the end.
func (p *parser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// eat consumes c if it is next.
func (p *parser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// ws skips JSON white space.
func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// str reads a string at p.i (which holds '"') and returns its unescaped
// bytes, written over the string's own text: an escape is never shorter
// than what it stands for. Invalid UTF-8 is kept as is; it can never match
// a signed challenge.
func (p *parser) str() ([]byte, bool) {
	b := p.b
	start := p.i + 1
	r := start
	for r < len(b) && b[r] != '"' && b[r] != '\\' && b[r] >= 0x20 {
		r++ // the common case: no escapes, nothing to move
	}
	w := r
	for r < len(b) {
		c := b[r]
		switch {
		case c == '"':
			p.i = r + 1
			return b[start:w], true
		case c < 0x20:
			return nil, false
		case c != '\\':
			b[w] = c
			r++
			w++
			continue
		}
		// An escape.
		if r+1 >= len(b) {
			return nil, false
		}
		e := b[r+1]
		r += 2
		switch e {
		case '"', '\\', '/':
			b[w] = e
		case 'b':
			b[w] = '\b'
		case 'f':
			b[w] = '\f'
		case 'n':
			b[w] = '\n'
		case 'r':
			b[w] = '\r'
		case 't':
			b[w] = '\t'
		case 'u':
			x, ok := hex4(b, r)
			if !ok {
				return nil, false
			}
			r += 4
			ch := rune(x)
			if utf16.IsSurrogate(ch) {
				// A pair is \uD8xx\uDCxx; a lone half becomes U+FFFD, as
				// encoding/json does.
				ch = utf8.RuneError
				if r+6 <= len(b) && b[r] == '\\' && b[r+1] == 'u' {
					if y, ok := hex4(b, r+2); ok {
						if pair := utf16.DecodeRune(rune(x), rune(y)); pair != utf8.RuneError {
							ch = pair
							r += 6
						}
					}
				}
			}
			w += utf8.EncodeRune(b[w:], ch)
			continue
		default:
			return nil, false
		}
		w++
	}
	return nil, false
}

// hex4 reads four hex digits at b[i:].
func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var x uint16
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		x = x<<4 | uint16(c)
	}
	return x, true
}

// integer reads a non-negative JSON integer in canonical form (no sign,
// fraction, exponent or leading zero) of at most 19 digits, and returns its
// digits, which are then exactly the decimal the solver hashed.
func (p *parser) integer() ([]byte, bool) {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	d := p.b[start:p.i]
	if len(d) == 0 || len(d) > 19 || (d[0] == '0' && len(d) > 1) {
		return nil, false
	}
	switch p.peek() {
	case '.', 'e', 'E':
		return nil, false
	}
	return d, true
}

// skip skips one JSON value of any kind at nesting depth.
func (p *parser) skip(depth int) bool {
	switch c := p.peek(); {
	case c == '"':
		_, ok := p.str()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.word("true")
	case c == 'f':
		return p.word("false")
	case c == 'n':
		return p.word("null")
	case c == '[' || c == '{':
		if depth >= maxDepth {
			return false
		}
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		p.i++
		p.ws()
		if p.eat(end) {
			return true
		}
		for {
			if c == '{' {
				if p.peek() != '"' {
					return false
				}
				if _, ok := p.str(); !ok {
					return false
				}
				p.ws()
				if !p.eat(':') {
					return false
				}
				p.ws()
			}
			if !p.skip(depth + 1) {
				return false
			}
			p.ws()
			if p.eat(end) {
				return true
			}
			if !p.eat(',') {
				return false
			}
			p.ws()
		}
	}
	return false
}

// word consumes the literal w.
func (p *parser) word(w string) bool {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return false
	}
	p.i += len(w)
	return true
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() bool {
	p.eat('-')
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case c >= '1' && c <= '9':
		p.digits()
	default:
		return false
	}
	if p.eat('.') && !p.digits() {
		return false
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if !p.digits() {
			return false
		}
	}
	return true
}

// digits consumes one or more decimal digits and reports whether there
// were any.
func (p *parser) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}
