package connguard

import "testing"

func BenchmarkCheck(b *testing.B) {
	head := []byte("GET /v1/rooms/default/sessions/AAAAAAAAAAJn7rTY6nTiOoo45WfgLSWk HTTP/1.1\r\nHost: waitroom.example\r\n" +
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36\r\n" +
		"Accept: application/json\r\nAccept-Language: en-US,en;q=0.9\r\nCookie: waitroom-default=eyJhbGciOiJFZERTQSJ9.eyJpc3MiOiJ3YWl0cm9vbSJ9.c2ln\r\n\r\n")
	b.ReportAllocs()
	for range b.N {
		if v := check(head); v.code != "" {
			b.Fatal(v)
		}
	}
}

// FuzzFastCheck: on every head fastCheck takes, slowCheck (net/http's
// parser) gives the same answer.
func FuzzFastCheck(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /a?b=%20c HTTP/1.1\r\nHost: h:80\r\nContent-Length: 007\r\nX:\r\n\r\n",
		"GET /x HTTP/1.0\n\n",
		"PUT /x HTTP/1.1\r\nhost: [::1]:8\r\ncontent-length:  12 \t\r\nA-B: \xff\xfe v\r\n\r\n",
		"DELETE /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 999999999999999999\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		c := &conn{}
		end := c.headEnd(head)
		if end < 0 {
			return
		}
		head = head[:end]
		fast, ok := fastCheck(head)
		if !ok {
			return
		}
		if slow := slowCheck(head); slow != fast {
			t.Fatalf("head %q: fastCheck %+v, slowCheck %+v", head, fast, slow)
		}
	})
}
