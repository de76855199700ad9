package openapitest

import (
	"fmt"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The document's own formats: ranges of Go duration strings, which a
// pattern cannot state. A value of another type passes, as JSON Schema's
// formats do; the pattern beside the format checks the syntax.
const (
	// FormatDuration is 0, or from 1ms to 8784h (366 days).
	FormatDuration = "go-duration"
	// FormatDurationMS is from 1ms to 8784h in whole milliseconds.
	FormatDurationMS = "go-duration-ms"
)

// maxDuration is the longest duration the document allows, 366 days.
const maxDuration = 366 * 24 * time.Hour

// Formats returns the document's own formats, for a JSON Schema compiler
// that validates against it (this package registers them on its own).
func Formats() []*jsonschema.Format {
	return []*jsonschema.Format{
		{Name: FormatDuration, Validate: durationIn(false)},
		{Name: FormatDurationMS, Validate: durationIn(true)},
	}
}

// durationIn checks a duration string's range: 0 or [1ms, 366 days], or
// with positive [1ms, 366 days] in whole milliseconds. This is written
// from the document's words, not from the server's code, so that a test
// of the server against the document compares two accounts.
func durationIn(positive bool) func(v any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a Go duration", s)
		}
		switch {
		case d == 0 && !positive:
			return nil
		case d < time.Millisecond || d > maxDuration:
			return fmt.Errorf("%q is outside 1ms to 8784h", s)
		case positive && d%time.Millisecond != 0:
			return fmt.Errorf("%q is not a whole number of milliseconds", s)
		}
		return nil
	}
}
