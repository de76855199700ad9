package waitroom

import "time"

// CheckExtend returns the CodeInvalidRequest error of a Store.Extend whose by
// no store could accept: outside [1ms, MaxDuration], or finer than a
// millisecond.
func CheckExtend(by time.Duration) error {
	if by < time.Millisecond || by > MaxDuration.D() {
		return Errorf(CodeInvalidRequest, "An extension is between 1ms and %s, not %s.", MaxDuration, by)
	}
	if by%time.Millisecond != 0 {
		// Deadlines are kept to the millisecond: a finer extension would
		// be cut, and the session extended by less than asked.
		return Errorf(CodeInvalidRequest, "An extension is a whole number of milliseconds, not %s.", by)
	}
	return nil
}

// CheckExtended returns the CodeInvalidRequest error of an extension that
// would make a session's total Extended longer than MaxDuration.
func CheckExtended(total time.Duration) error {
	if total > MaxDuration.D() {
		return Errorf(CodeInvalidRequest, "A session can be extended by at most %s in all.", MaxDuration)
	}
	return nil
}
