package waitroom

import "time"

// CheckExtend returns the CodeInvalidRequest error of a Store.Extend whose by
// no store could accept: outside [1ms, MaxDuration].
func CheckExtend(by time.Duration) error {
	if by < time.Millisecond || by > MaxDuration.D() {
		return Errorf(CodeInvalidRequest, "An extension is between 1ms and %s, not %s.", MaxDuration, by)
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
