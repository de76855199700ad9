package waitroom_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

// TestNullIsRefusedNotAbsent: a null anywhere in a body decoded into a
// struct is invalid_json naming where it is, as a value of the wrong type
// ([]) is; an absent field is still its default.
func TestNullIsRefusedNotAbsent(t *testing.T) {
	for _, tc := range []struct{ in, where string }{
		{`null`, "body is null"},
		{` null `, "body is null"},
		{`{"capacity":null}`, `"capacity"`},
		{`{"mode":"auto","opens_at":null}`, `"opens_at"`},
		{`{"tiers":[{"name":"vip"},null]}`, `"tiers[1]"`},
		{`{"tiers":[{"name":"vip","share":null}]}`, `"tiers[0].share"`},
		{`{"return_origins":[null]}`, `"return_origins[0]"`},
	} {
		_, err := waitroom.ParseRoomConfig([]byte(tc.in))
		if waitroom.ErrorCode(err) != waitroom.CodeInvalidJSON || !strings.Contains(err.Error(), tc.where) {
			t.Errorf("ParseRoomConfig(%s) = %v, want invalid_json naming %s", tc.in, err, tc.where)
		}
	}
	if _, err := waitroom.ParseRoomConfig([]byte(`{"capacity":[]}`)); waitroom.ErrorCode(err) != waitroom.CodeInvalidJSON {
		t.Errorf("[] for a number: %v, want invalid_json like null", err)
	}
	for _, in := range []string{``, `  `, `{}`, `{"capacity":5,"tiers":[{"name":"a"}]}`, `{"target_url":"/null"}`} {
		if _, err := waitroom.ParseRoomConfig([]byte(in)); err != nil {
			t.Errorf("ParseRoomConfig(%q) = %v, want it accepted", in, err)
		}
	}
	var s struct {
		Key *string `json:"key"`
	}
	if err := waitroom.DecodeJSON([]byte(`{"key":null}`), &s); waitroom.ErrorCode(err) != waitroom.CodeInvalidJSON {
		t.Errorf("DecodeJSON of a null key into a struct: %v, want invalid_json", err)
	}
	// A raw target keeps its nulls for the caller (a merge patch removes
	// the fields it sets to null).
	var raw map[string]json.RawMessage
	if err := waitroom.DecodeJSON([]byte(`{"capacity":null}`), &raw); err != nil || string(raw["capacity"]) != "null" {
		t.Errorf("DecodeJSON into a map: %v, %q; want the null kept", err, raw["capacity"])
	}
	var m map[string]any
	if err := waitroom.DecodeJSON([]byte(`{"a":{"b":null}}`), &m); err != nil {
		t.Errorf("DecodeJSON into map[string]any: %v, want the null kept", err)
	}
}
