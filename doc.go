// Package waitroom holds the domain of a virtual waiting room: rooms and their
// configuration, sessions and their statuses, the error type every layer
// speaks, room events, and the Store interface that every storage backend
// implements.
//
// The package imports only the standard library. Storage backends live in
// their own packages (memstore, sqlitestore, …) and are wired together only by
// cmd/waitroom.
package waitroom
