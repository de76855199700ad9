package web

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

func TestPickLanguage(t *testing.T) {
	for _, tc := range []struct {
		header, want string
	}{
		{"", "en"},
		{"de", "de"},
		{"de-AT", "de"},
		{"FR-ca", "fr"},
		{"en-US,en;q=0.9,de;q=0.8", "en"},
		{"fr;q=0.9, de;q=0.95", "de"},
		{"es, fr;q=0.1", "fr"},
		{"de;q=0, fr;q=0.2", "fr"},
		{"de;q=0", "en"},
		{"*", "en"},
		{"xx, *;q=0.5, de;q=0.4", "en"},
		{"fr;q=abc, de;q=0.5", "de"},
		{"fr;q=2, de;q=0.5", "de"},
		{"de;q=0.5, fr;q=0.5", "de"},
		{"  de ;  q = 0.7 ", "de"},
		{",,;;==", "en"},
	} {
		if got := pickLanguage(tc.header).Lang; got != tc.want {
			t.Errorf("pickLanguage(%q) = %s, want %s", tc.header, got, tc.want)
		}
	}
}

// Every language fills every message, and keeps the placeholders English has.
func TestEveryLanguageIsComplete(t *testing.T) {
	en := reflect.ValueOf(english)
	for _, m := range languages {
		v := reflect.ValueOf(*m)
		for i := 0; i < v.NumField(); i++ {
			name := v.Type().Field(i).Name
			got, ref := v.Field(i).String(), en.Field(i).String()
			if got == "" {
				t.Errorf("%s: %s is empty", m.Lang, name)
			}
			for _, ph := range []string{"{n}", "{low}", "{high}", "{room}", "{time}"} {
				if strings.Contains(ref, ph) != strings.Contains(got, ph) {
					t.Errorf("%s: %s = %q, placeholder %s differs from English %q", m.Lang, name, got, ph, ref)
				}
			}
		}
	}
	if got := Languages(); !reflect.DeepEqual(got, []string{"en", "de", "fr"}) {
		t.Errorf("Languages() = %v", got)
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		lang string
		n    int64
		want string
	}{
		{"en", 7, "7"}, {"en", 999, "999"}, {"en", 1234, "1,234"}, {"en", 1234567, "1,234,567"},
		{"de", 1234, "1.234"}, {"fr", 1234, "1\u202f234"}, {"fr", 12, "12"}, {"en", -1234, "-1,234"},
	} {
		if got := pickLanguage(tc.lang).number(tc.n); got != tc.want {
			t.Errorf("%s number(%d) = %q, want %q", tc.lang, tc.n, got, tc.want)
		}
	}
}

func TestETAText(t *testing.T) {
	eta := func(low, high int64) *waitroom.ETA {
		return &waitroom.ETA{Seconds: (low + high) / 2, Low: low, High: high}
	}
	for _, tc := range []struct {
		lang string
		eta  *waitroom.ETA
		want string
	}{
		{"en", nil, "Not known yet"},
		{"en", eta(5, 50), "Less than a minute"},
		{"en", eta(5, 60), "Less than a minute"},
		{"en", eta(30, 61), "1 to 2 minutes"},
		{"en", eta(60, 119), "1 to 2 minutes"},
		{"en", eta(130, 130), "2 to 3 minutes"},
		{"en", eta(120, 120), "About 2 minutes"},
		{"en", eta(300, 900), "5 to 15 minutes"},
		{"en", eta(3600, 3600*5), "1 to 5 hours"},
		{"en", eta(3600*3, 3600*3), "About 3 hours"},
		{"en", eta(7200, 7261), "2 to 3 hours"},
		{"de", eta(300, 900), "5 bis 15 Minuten"},
		{"fr", eta(300, 900), "5 à 15 minutes"},
		{"de", nil, "Noch unbekannt"},
	} {
		if got := pickLanguage(tc.lang).etaText(tc.eta); got != tc.want {
			t.Errorf("%s etaText(%+v) = %q, want %q", tc.lang, tc.eta, got, tc.want)
		}
	}
}

func TestAnnouncement(t *testing.T) {
	for _, tc := range []struct {
		lang string
		pos  int64
		want string
	}{
		{"en", 1, "You are number 1 in line. You’re next."},
		{"en", 2, "You are number 2 in line. 1 person is ahead of you."},
		{"en", 3, "You are number 3 in line. 2 people are ahead of you."},
		{"de", 2, "Sie sind auf Platz 2. 1 Person ist vor Ihnen."},
		{"fr", 3, "Vous êtes numéro 3 dans la file. 2 personnes sont devant vous."},
	} {
		s := waitroom.Session{Status: waitroom.StatusWaiting, Position: tc.pos}
		if got := pickLanguage(tc.lang).announcement(s); got != tc.want {
			t.Errorf("%s announcement(position %d) = %q, want %q", tc.lang, tc.pos, got, tc.want)
		}
	}
}

func TestProgressAndRefresh(t *testing.T) {
	for _, tc := range []struct {
		waited time.Duration
		eta    int64
		want   int
	}{
		{0, 100, 1}, {0, 0, 1}, {time.Minute, 60, 50}, {9 * time.Minute, 60, 90}, {time.Hour, 0, 99}, {-time.Minute, 60, 1},
	} {
		if got := progress(tc.waited, tc.eta); got != tc.want {
			t.Errorf("progress(%v, %d) = %d, want %d", tc.waited, tc.eta, got, tc.want)
		}
	}
	for _, tc := range []struct {
		timeout time.Duration
		want    int
	}{
		{0, 10}, {time.Minute, 10}, {15 * time.Second, 5}, {time.Second, 5}, {24 * time.Second, 8},
	} {
		cfg := waitroom.DefaultConfig()
		cfg.WaitingTimeout = waitroom.Duration(tc.timeout)
		if got := refreshSeconds(cfg); got != tc.want {
			t.Errorf("refreshSeconds(waiting_timeout %v) = %d, want %d", tc.timeout, got, tc.want)
		}
	}
}

func TestBuiltinPageRunsInEveryState(t *testing.T) {
	for _, p := range samplePages() {
		var b strings.Builder
		if err := builtin.ExecuteTemplate(&b, "page.html", p); err != nil {
			t.Errorf("built-in page, %s: %v", p.Status, err)
		}
	}
}
