package storetest

import (
	"fmt"
	"sync"

	"github.com/waitroom/waitroom"
)

// Recorder collects, from many goroutines at once, every session a Join
// returned and the first problems seen, and checks what each answer must
// show whatever else is happening: active within capacity, and a waiting
// position inside the line. The concurrency tests of every backend use it.
type Recorder struct {
	// Capacity is the room's capacity the answers are checked against.
	Capacity int

	mu     sync.Mutex
	issued []waitroom.Session
	errs   []string
}

// Report records a problem; the first 20 are kept.
func (r *Recorder) Report(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

// Check reports what is wrong with s, the answer of the operation what.
func (r *Recorder) Check(what string, s waitroom.Session) {
	if s.Active > r.Capacity {
		r.Report("%s: active %d > capacity %d", what, s.Active, r.Capacity)
	}
	if s.Status == waitroom.StatusWaiting && (s.Position < 1 || s.Position > int64(s.Waiting)) {
		r.Report("%s: position %d outside 1..%d", what, s.Position, s.Waiting)
	}
}

// Issued records a session a Join returned, after checking it.
func (r *Recorder) Issued(s waitroom.Session) {
	r.Check("Join", s)
	r.mu.Lock()
	r.issued = append(r.issued, s)
	r.mu.Unlock()
}

// Sessions returns every session recorded by Issued.
func (r *Recorder) Sessions() []waitroom.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.issued
}

// Errors returns the problems recorded.
func (r *Recorder) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs
}
