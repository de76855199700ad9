package server

import "testing"

// TestPerAddressAutoCaps: auto is a tenth of --max-connections, at least
// 16 and at most the cap itself; streams three quarters of it; explicit
// values win; no global cap and auto is no cap.
func TestPerAddressAutoCaps(t *testing.T) {
	for _, tc := range []struct {
		maxConns, perConn, perStream int
		wantConn, wantStream         int
	}{
		{100, AutoCap, AutoCap, 16, 12},
		{19744, AutoCap, AutoCap, 1974, 1480},
		{10, AutoCap, AutoCap, 10, 7},
		{0, AutoCap, AutoCap, 0, 0},
		{1000, 50, AutoCap, 50, 37},
		{1000, 0, AutoCap, 0, 75},
		{1000, AutoCap, 0, 100, 0},
		{0, 20, 5, 20, 5},
	} {
		c := Config{MaxConnections: tc.maxConns, MaxConnectionsPerAddress: tc.perConn, MaxStreamsPerAddress: tc.perStream}
		if got := c.connectionsPerAddress(); got != tc.wantConn {
			t.Errorf("%+v: %d connections an address, want %d", tc, got, tc.wantConn)
		}
		if got := c.streamsPerAddress(); got != tc.wantStream {
			t.Errorf("%+v: %d streams an address, want %d", tc, got, tc.wantStream)
		}
	}
	d := Defaults()
	if d.MaxConnectionsPerAddress != AutoCap || d.MaxStreamsPerAddress != AutoCap || d.MaxStreamsPerSession != DefaultMaxStreamsPerSession {
		t.Errorf("defaults: %d, %d, %d", d.MaxConnectionsPerAddress, d.MaxStreamsPerAddress, d.MaxStreamsPerSession)
	}
}
