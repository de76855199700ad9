package redisstore

import "time"

// WithDrawStep sets how many entrants one script run of a draw applies, so
// tests can make a small draw take many steps.
func WithDrawStep(n int) Option {
	return func(c *config) error {
		c.drawStep = n
		return nil
	}
}

// WithDrawLease sets how long a process may drive a draw without progress
// before another takes over.
func WithDrawLease(d time.Duration) Option {
	return func(c *config) error {
		c.drawLease = d
		return nil
	}
}

// DecodeEvent parses an event message of the wire format (events.go).
var DecodeEvent = decodeEvent
