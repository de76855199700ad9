package connguard

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"sync"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
)

// This file judges a whole request head: its request line, its headers
// and how its body is framed.

// verdict is what check concluded about a head.
type verdict struct {
	// code and msg are the refusal (the status is code's); code is ""
	// when the head is fine.
	code waitroom.Code
	msg  string
	// The framing of a head that is fine.
	chunked bool
	length  int64
	post    bool
}

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}

// check checks head, a whole request head: by fastCheck when it is a
// plain one, else by slowCheck.
func check(head []byte) verdict {
	if v, ok := fastCheck(head); ok {
		return v
	}
	return slowCheck(head)
}

// fastCheck checks a plain head without allocating: a request line of a
// token method, an origin-form target of visible ASCII (valid %-escapes)
// and HTTP/1.1 or HTTP/1.0, then "name: value" lines of a token name and a
// value without control characters but tab, one valid Host (none allowed
// in HTTP/1.0), at most one Content-Length of digits, and no
// Transfer-Encoding or Expect. net/http accepts every such head and frames
// its body by the Content-Length; for any other head ok is false and
// slowCheck decides (FuzzFastCheck holds the two to the same answers).
func fastCheck(head []byte) (v verdict, ok bool) {
	line, rest := cutLine(head)
	method, after, ok1 := bytes.Cut(line, []byte(" "))
	target, version, ok2 := bytes.Cut(after, []byte(" "))
	if !ok1 || !ok2 || len(method) == 0 || len(target) == 0 || target[0] != '/' {
		return v, false
	}
	for _, b := range method {
		if !tokenByte(b) {
			return v, false
		}
	}
	for i := 0; i < len(target); i++ {
		b := target[i]
		if b <= ' ' || b >= 0x7f {
			return v, false
		}
		if b == '%' && (i+2 >= len(target) || !isHex(target[i+1]) || !isHex(target[i+2])) {
			return v, false
		}
	}
	http11 := string(version) == "HTTP/1.1"
	if !http11 && string(version) != "HTTP/1.0" {
		return v, false
	}
	hosts, lengths := 0, 0
	for {
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break // the blank line
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 {
			return v, false
		}
		for _, b := range name {
			if !tokenByte(b) {
				return v, false
			}
		}
		for _, b := range value {
			if b < ' ' && b != '\t' || b == 0x7f {
				return v, false
			}
		}
		value = bytes.Trim(value, " \t")
		switch {
		case asciiEqualFold(name, "Host"):
			hosts++
			if !validHost(string(value)) {
				return v, false
			}
		case asciiEqualFold(name, "Content-Length"):
			lengths++
			if len(value) == 0 || len(value) > 18 {
				return v, false
			}
			var n int64
			for _, b := range value {
				if b < '0' || b > '9' {
					return v, false
				}
				n = n*10 + int64(b-'0')
			}
			v.length = n
		case asciiEqualFold(name, "Transfer-Encoding"), asciiEqualFold(name, "Expect"):
			return v, false
		}
	}
	if hosts > 1 || http11 && hosts == 0 || lengths > 1 {
		return v, false
	}
	v.post = string(method) == http.MethodPost
	return v, true
}

// cutLine cuts the first line off b, without its LF or CRLF.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

// slowCheck parses head with net/http's own parser, adds the checks
// net/http's server makes, and refuses a head framed two ways.
func slowCheck(head []byte) verdict {
	br := readers.Get().(*bufio.Reader)
	br.Reset(bytes.NewReader(head))
	req, err := http.ReadRequest(br)
	br.Reset(nil)
	readers.Put(br)
	bad := func(msg string) verdict {
		return verdict{code: waitroom.CodeInvalidRequest, msg: msg}
	}
	if err != nil {
		if strings.Contains(err.Error(), "transfer encoding") { // unsupported, or too many
			return bad("The only transfer coding accepted is chunked, alone.")
		}
		return bad("The request could not be parsed (" + clip(err.Error()) + ").")
	}
	// net/http's server: HTTP/1.x only (and the HTTP/2 preface, which a
	// handler may take over), a valid Host required in HTTP/1.1, valid
	// header names and values.
	h2Preface := req.ProtoMajor == 2 && req.ProtoMinor == 0 && req.Method == "PRI" && req.RequestURI == "*"
	if req.ProtoMajor != 1 && !h2Preface {
		return bad("Only HTTP/1.0 and HTTP/1.1 are served here, not " + clip(req.Proto) + ".")
	}
	// (ReadRequest has taken Host out of the header, and Content-Length
	// out when it is chunked: those come from the raw head.)
	f := rawFields(head)
	if req.ProtoAtLeast(1, 1) && f.hosts == 0 && !h2Preface && req.Method != http.MethodConnect {
		return bad("An HTTP/1.1 request needs a Host header.")
	}
	if f.hosts == 1 && (f.hostFolded || !validHost(f.host)) {
		return bad("The Host header is malformed.")
	}
	for k, vv := range req.Header {
		if !validName(k) {
			return bad("A header name is malformed.")
		}
		for _, v := range vv {
			if !validValue(v) {
				return bad("The value of header " + clip(k) + " holds a control character.")
			}
		}
	}
	// Framing: net/http lets Transfer-Encoding override Content-Length
	// (and drops the latter), and ignores Transfer-Encoding in HTTP/1.0.
	switch {
	case f.te && f.cl:
		return bad("A request may not have both Content-Length and Transfer-Encoding.")
	case f.te && !req.ProtoAtLeast(1, 1):
		return bad("An HTTP/1.0 request may not have Transfer-Encoding.")
	}
	if e := req.Header.Get("Expect"); e != "" && !hasToken(e, "100-continue") {
		return verdict{code: apierror.CodeExpectationFailed,
			msg: "The only expectation met here is Expect: 100-continue."}
	}
	v := verdict{post: req.Method == http.MethodPost}
	if len(req.TransferEncoding) > 0 {
		v.chunked = true
	} else if req.ContentLength > 0 {
		v.length = req.ContentLength
	}
	return v
}

// fields is what rawFields found in a head.
type fields struct {
	cl, te     bool   // Content-Length and Transfer-Encoding are there, whatever their values
	hosts      int    // Host fields
	host       string // the last one's value, trimmed as net/http trims it
	hostFolded bool   // it went on over more lines (obs-fold): net/http joins them with a space
}

// rawFields reads the fields net/http's parsed request no longer shows
// from head: whether Content-Length and Transfer-Encoding are there, and
// the Host fields. Names match as net/http matches them: exactly, but for
// ASCII case.
func rawFields(head []byte) fields {
	var f fields
	last := ""
	i := bytes.IndexByte(head, '\n')
	for rest := head[i+1:]; len(rest) > 0; {
		line := rest
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			line, rest = rest[:j], rest[j+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			break // the blank line
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last == "host" {
				f.hostFolded = true
			}
			continue // a continuation of the field before
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		last = ""
		switch {
		case !ok:
		case asciiEqualFold(name, "Content-Length"):
			f.cl = true
		case asciiEqualFold(name, "Transfer-Encoding"):
			f.te = true
		case asciiEqualFold(name, "Host"):
			last = "host"
			f.hosts++
			f.host = string(bytes.Trim(value, " \t"))
			f.hostFolded = false
		}
	}
	return f
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// hasToken reports whether v holds token as a comma- or space-separated
// element, ignoring ASCII case, as net/http reads Expect.
func hasToken(v, token string) bool {
	for i := 0; i+len(token) <= len(v); i++ {
		if (i == 0 || boundary(v[i-1])) && (i+len(token) == len(v) || boundary(v[i+len(token)])) &&
			strings.EqualFold(v[i:i+len(token)], token) {
			return true
		}
	}
	return false
}

func boundary(b byte) bool { return b == ' ' || b == ',' || b == '\t' }

// validName reports whether k is a header field name (a token).
func validName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !tokenByte(k[i]) {
			return false
		}
	}
	return true
}

func tokenByte(b byte) bool { return tokenBytes[b] }

// tokenBytes and hostBytes are the bytes of a token, and those a Host may
// hold (net/http's rules).
var tokenBytes, hostBytes = byteSet("!#$%&'*+-.^_`|~"), byteSet("!$%&'()*+,-.:;=[]_~")

// byteSet is the set of ASCII letters, digits and the bytes of extra.
func byteSet(extra string) (set [256]bool) {
	for b := range 256 {
		set[b] = 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte(extra, byte(b)) >= 0
	}
	return set
}

// validValue reports whether v holds no control character but tab.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// validHost reports whether h has only bytes a Host may (net/http's rule).
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if !hostBytes[h[i]] {
			return false
		}
	}
	return true
}
