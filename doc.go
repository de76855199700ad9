// Package waitroom holds what a storage backend and a client of waitroom
// share: rooms and their configuration, sessions and their statuses, the
// error type and the error kinds every layer speaks, room events, and the
// contracts a backend implements: Store and, beside it, Ledger (audit log,
// statistics buckets, console sign-ins) and Hooks (webhook endpoints and
// the outbox of their messages, written in the same atomic step as the
// change they report).
//
// The package imports only the standard library. Storage backends live in
// their own packages (memstore, sqlitestore, redisstore) and are checked by
// one suite (storetest); package client speaks to a server over HTTP and
// returns the same types and errors. The server itself (its HTTP layers,
// the status of each error code, webhook delivery, statistics) is internal
// to the module and assembled in one place, package server, which
// cmd/waitroom runs.
package waitroom
