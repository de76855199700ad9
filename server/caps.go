package server

// AutoCap, as MaxConnectionsPerAddress or MaxStreamsPerAddress, derives the
// cap from MaxConnections (see each field).
const AutoCap = -1

// DefaultMaxStreamsPerSession is the default MaxStreamsPerSession: a few
// tabs or devices on one place in line. The waiting page closes its
// stream while its tab is hidden, and one refused falls back to polling.
const DefaultMaxStreamsPerSession = 4

// autoPerAddress is the auto per-address connection cap under maxConns: a
// tenth of it, so that no one address (a NAT or an office included) holds
// more than a tenth of the process's connections, but at least 16, what one
// browser (6 connections a host) and a few more behind the same address
// need; never more than maxConns. 0 when maxConns is (no cap).
func autoPerAddress(maxConns int) int {
	if maxConns <= 0 {
		return 0
	}
	return min(max(16, maxConns/10), maxConns)
}

// connectionsPerAddress is the per-address connection cap in force.
func (c Config) connectionsPerAddress() int {
	if c.MaxConnectionsPerAddress == AutoCap {
		return autoPerAddress(c.MaxConnections)
	}
	return c.MaxConnectionsPerAddress
}

// streamsPerAddress is the per-address stream cap in force: auto is three
// quarters of the per-address connection cap (its auto value when it is
// off), so that an address holding its most streams still has a quarter
// of its connections for joins and polls.
func (c Config) streamsPerAddress() int {
	if c.MaxStreamsPerAddress != AutoCap {
		return c.MaxStreamsPerAddress
	}
	base := c.connectionsPerAddress()
	if base <= 0 {
		base = autoPerAddress(c.MaxConnections)
	}
	if base <= 0 {
		return 0
	}
	return max(base*3/4, 1)
}
