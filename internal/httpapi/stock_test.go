package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

// TestStockOverHTTP follows a room with an inventory over real HTTP: units
// reserved on admission, sold through the admin API in bulk and per
// session, the line ended when everything is sold, and bad input refused
// with the documented errors and no change.
func TestStockOverHTTP(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/sale", `{"capacity":5,"inventory":3}`)
	var ss []waitroom.Session
	for range 5 {
		ss = append(ss, e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/sale/sessions", "")))
	}
	raw := string(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/sale/sessions/"+ss[0].ID, "").body)
	if !strings.Contains(raw, `"remaining":0`) || !strings.Contains(raw, `"unit":true`) {
		t.Errorf("an admitted session's JSON %s lacks remaining 0 and unit true", raw)
	}
	raw = string(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/sale/sessions/"+ss[4].ID, "").body)
	if !strings.Contains(raw, `"remaining":0`) || strings.Contains(raw, `"unit"`) {
		t.Errorf("a waiting session's JSON %s: want remaining 0 and no unit", raw)
	}
	room := func(ans answer) waitroom.Room {
		t.Helper()
		var r waitroom.Room
		if err := json.Unmarshal(ans.body, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		body   string
		status int
		code   waitroom.Code
	}{
		{`{"sold":4}`, http.StatusConflict, waitroom.CodeStockConflict},
		{`{"sold":1,"set":3}`, http.StatusBadRequest, waitroom.CodeInvalidRequest},
		{`{}`, http.StatusBadRequest, waitroom.CodeInvalidRequest},
		{`{"set":-1}`, http.StatusBadRequest, waitroom.CodeInvalidRequest},
		{`{"set":1}`, http.StatusConflict, waitroom.CodeStockConflict},
		{`{"sold":"2"}`, http.StatusBadRequest, waitroom.CodeInvalidJSON},
		{`{"sold":1.5}`, http.StatusBadRequest, waitroom.CodeInvalidJSON},
		{`{"bought":1}`, http.StatusBadRequest, waitroom.CodeInvalidJSON},
		{`{"session":"nope","sold":1}`, http.StatusBadRequest, waitroom.CodeInvalidSessionID},
		{`{"session":"` + ss[0].ID + `","sold":2}`, http.StatusBadRequest, waitroom.CodeInvalidRequest},
		{`{"session":"` + ss[4].ID + `","sold":1}`, http.StatusConflict, waitroom.CodeStockConflict},
	} {
		wantError(t, e.do(withAdmin, "POST", "/v1/rooms/sale/inventory", tc.body), tc.status, tc.code)
	}
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/sale/inventory", `{"sold":1}`), http.StatusUnauthorized, waitroom.CodeUnauthorized)
	r := room(e.must(http.StatusOK, withAdmin, "GET", "/v1/rooms/sale", ""))
	if r.Remaining == nil || *r.Remaining != 0 {
		t.Fatalf("public status after refused changes = %+v, want remaining 0", r)
	}

	r = room(e.must(http.StatusOK, withAdmin, "POST", "/v1/rooms/sale/inventory", `{"session":"`+ss[2].ID+`","sold":1}`))
	if r.Sold != 1 || r.Reserved != 2 {
		t.Errorf("after one session's unit sold: %+v, want sold 1, reserved 2", r)
	}
	r = room(e.must(http.StatusOK, withAdmin, "POST", "/v1/rooms/sale/inventory", `{"released":1}`))
	if r.Sold != 1 || r.Reserved != 2 || r.Active != 4 {
		t.Errorf("after one unit released: %+v, want it reserved again at once by the next in line (4 active)", r)
	}
	r = room(e.must(http.StatusOK, withAdmin, "POST", "/v1/rooms/sale/inventory", `{"sold":2}`))
	if r.Sold != 3 || r.Reserved != 0 || r.Waiting != 0 || *r.Remaining != 0 {
		t.Errorf("after selling out: %+v, want sold 3 and nobody waiting", r)
	}
	got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/sale/sessions/"+ss[4].ID, ""))
	if got.Status != waitroom.StatusExpired || got.EndReason != waitroom.ReasonSoldOut {
		t.Errorf("the last in line after the sell-out = %s (%s), want expired sold_out", got.Status, got.EndReason)
	}
	ans := e.do(noAuth, "POST", "/v1/rooms/sale/sessions", "")
	wantError(t, ans, http.StatusConflict, waitroom.CodeSoldOut)
	wantError(t, e.do(withAdmin, "PUT", "/v1/rooms/sale", `{"inventory":1000000001}`), http.StatusBadRequest, waitroom.CodeInvalidConfig)
	wantError(t, e.do(withAdmin, "PUT", "/v1/rooms/sale", `{"inventory":-1}`), http.StatusBadRequest, waitroom.CodeInvalidConfig)
	wantError(t, e.do(withAdmin, "PUT", "/v1/rooms/sale", `{"inventory":2}`), http.StatusConflict, waitroom.CodeStockConflict)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/plain", `{}`)
	wantError(t, e.do(withAdmin, "POST", "/v1/rooms/plain/inventory", `{"sold":1}`), http.StatusConflict, waitroom.CodeStockConflict)
}
