package challenge

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestSignIsHMAC checks the hand-rolled HMAC against crypto/hmac for keys
// shorter than, as long as, and longer than SHA-256's block.
func TestSignIsHMAC(t *testing.T) {
	msg := []byte("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
	for _, n := range []int{16, 32, 63, 64, 65, 200} {
		key := bytes.Repeat([]byte{byte(n)}, n)
		m := hmac.New(sha256.New, key)
		m.Write(msg)
		want := hex.EncodeToString(m.Sum(nil))
		if got := string(New(key, 0).sign(nil, msg)); got != want {
			t.Errorf("key of %d bytes: sign = %s, want %s", n, got, want)
		}
	}
}

func TestParseSolution(t *testing.T) {
	const rest = `"challenge":"c","salt":"s?a=1&b=2","signature":"g"`
	for _, tc := range []struct {
		in   string
		ok   bool
		want solution
	}{
		{`{"algorithm":"SHA-256","number":42,` + rest + `}`, true, solution{algorithm: []byte("SHA-256"), number: []byte("42")}},
		{" \t\r\n{ \"number\" : 0 , \"algorithm\":\"A\\u0026\\n\\\"\\/\\\\\\ud83d\\ude00\\ud800x\"," + rest + "} \n", true,
			solution{algorithm: []byte("A&\n\"/\\\U0001F600\uFFFDx"), number: []byte("0")}},
		{`{"algorithm":"a","number":1,` + rest + `,"took":12.5e+3,"x":{"y":[null,true,false,"]"]}}`, true, solution{algorithm: []byte("a"), number: []byte("1")}},
		{`{"algorithm":"a","number":01,` + rest + `}`, false, solution{}},
		{`{"algorithm":"a","number":1.0,` + rest + `}`, false, solution{}},
		{`{"algorithm":"a","number":1e3,` + rest + `}`, false, solution{}},
		{`{"algorithm":"a","number":-1,` + rest + `}`, false, solution{}},
		{`{"algorithm":"a","number":"1",` + rest + `}`, false, solution{}},
		{`{"algorithm":"a","number":12345678901234567890,` + rest + `}`, false, solution{}},
		{`{"algorithm":1,"number":1,` + rest + `}`, false, solution{}},
		{`{"algorithm":"a","number":1,` + rest + `,"number":2}`, false, solution{}},
		{`{"algorithm":"a","number":1,` + rest + `,}`, false, solution{}},
		{`{"algorithm":"a","number":1,` + rest + `}x`, false, solution{}},
		{`{"algorithm":"a\x01","number":1,` + rest + `}`, false, solution{}},
		{`{"algorithm":"a\q","number":1,` + rest + `}`, false, solution{}},
		{`{"algorithm":"a\u12","number":1,` + rest + `}`, false, solution{}},
		{`{"number":1,` + rest + `}`, false, solution{}},
		{`{"algorithm":"a","number":1,` + rest + `,"x":tru}`, false, solution{}},
		{`{"algorithm":"a","number":1,` + rest + `,"x":01}`, false, solution{}},
		{`{"algorithm":"a","number":1,` + rest + `,"x":[1,]}`, false, solution{}},
		{`{"algorithm":"a","number":1,` + rest + `,"x":{1:2}}`, false, solution{}},
	} {
		got, ok := parseSolution([]byte(tc.in))
		if ok != tc.ok {
			t.Errorf("parseSolution(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if string(got.algorithm) != string(tc.want.algorithm) || string(got.number) != string(tc.want.number) ||
			string(got.challenge) != "c" || string(got.salt) != "s?a=1&b=2" || string(got.signature) != "g" {
			t.Errorf("parseSolution(%q) = %q %q %q %q %q", tc.in, got.algorithm, got.number, got.challenge, got.salt, got.signature)
		}
	}
}

func TestSaltParams(t *testing.T) {
	for _, tc := range []struct {
		salt    string
		expires int64
		room    string
		ok      bool
		max     int64
	}{
		{"abc?expires=17&room=r&max=5000&", 17, "r", true, 5000},
		{"abc?expires=17&room=r&max=5000", 17, "r", true, 5000},
		{"abc?room=a%26b+c&x=1&max=1&expires=0&", 0, "a&b c", true, 1},
		{"abc?expires=17&room=r", 0, "", false, 0},
		{"abc?expires=17&room=r&max=0&", 0, "", false, 0},
		{"abc?expires=17&room=r&max=&", 0, "", false, 0},
		{"abc?expires=17&room=r&max=1&max=2&", 0, "", false, 0},
		{"abc?expires=17&room=r&max=-3&", 0, "", false, 0},
		{"abc?expires=17&room=r&max=9007199254740992&", 0, "", false, 0},
		{"abc?expires=17&max=1&", 0, "", false, 0},
		{"abc?room=r&max=1&", 0, "", false, 0},
		{"abc&expires=17&room=r&max=1&", 0, "", false, 0},
		{"abc?expires=17&room=r&room=s&max=1&", 0, "", false, 0},
		{"abc?expires=17&expires=18&room=r&max=1&", 0, "", false, 0},
		{"abc?expires=-1&room=r&max=1&", 0, "", false, 0},
		{"abc?expires=99999999999999999999&room=r&max=1&", 0, "", false, 0},
		{"abc?expires=9223372036854775808&room=r&max=1&", 0, "", false, 0},
		{"abc?expires=17&room=%zz&max=1&", 0, "", false, 0},
	} {
		exp, room, maxN, ok := saltParams([]byte(tc.salt))
		if ok != tc.ok || ok && (exp != tc.expires || room != tc.room || maxN != tc.max) {
			t.Errorf("saltParams(%q) = %d, %q, %d, %v; want %d, %q, %d, %v", tc.salt, exp, room, maxN, ok, tc.expires, tc.room, tc.max, tc.ok)
		}
	}
}
