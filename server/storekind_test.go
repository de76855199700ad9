package server

import "testing"

// The start-up log names the store it serves (issue 25: a Redis store
// was logged as store=sqlite): every Redis URL form is "redis".
func TestStoreKind(t *testing.T) {
	for url, want := range map[string]string{
		"redis://127.0.0.1:6379/0":                  "redis",
		"rediss://h:6380":                           "redis",
		"redis+cluster://a:7000,b:7001":             "redis",
		"rediss+cluster://a:7000":                   "redis",
		"redis+sentinel://a:26379,b:26380/mymaster": "redis",
		"rediss+sentinel://a:26379/mymaster/2":      "redis",
		"memory":                                    "memory",
		"/var/lib/waitroom":                         "sqlite",
	} {
		if got := (Config{StoreURL: url}).StoreKind(); got != want {
			t.Errorf("StoreKind(%q) = %q, want %q", url, got, want)
		}
	}
}
