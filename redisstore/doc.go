// Package redisstore is the waitroom.Store for several waitroom processes
// sharing one waiting room: all state lives in Redis, standalone (or behind
// Sentinel) or Cluster, and every invariant of the contract holds however
// many processes serve a room.
//
// Every operation is one Lua script run with EVALSHA (falling back to EVAL
// when the server lacks the script), so it is atomic in Redis: the script
// first expires what is due and admits, does its work, and settles again,
// exactly like memstore, whose state machine it mirrors. Time comes in as an
// argument (unix milliseconds); each room keeps the latest time it has seen
// and treats an earlier one as that.
//
// All keys of a room share one hash tag, so a room lives in one Cluster
// slot: <prefix>:{<room>}:room (configuration, clock, token bucket), :seq
// (ticket counter, never deleted, so tickets are never reused), :wait and
// :active (sorted sets scored by ticket, or in :wait by the negative place an
// operator's move gave: a position is ZRANK+1, exact and O(log n)), :s:<ticket> (one hash per session), :keys (key → live ticket),
// :due (ticket → scheduled deadline, so expiry work is proportional to what
// is due), :hist (a capped stream of ended sessions, newest first by
// XREVRANGE) and :lease (the process that sweeps the room), and, for a
// scheduled room, the pre-queue and draw keys schedule.lua lists, for a
// room with an inventory :hold (the tickets holding a unit, stock.lua), and
// for joins that spend tokens :uc and :ux (the uses counted and when each
// count ends, tiers.lua). In a room with tiers :wait is scored by the place
// each session's tier gave it (waitroom.StrictPlace, WeightedPlace). Ended
// sessions' hashes are kept for the history retention so Session and Leave
// still answer for them. The set <prefix>:rooms lists room names; it is
// outside the rooms' slots, so it is updated by a separate command and Rooms
// skips names whose room is gone.
//
// # Durability
//
// A change is as durable as Redis is configured to make it. With AOF and
// appendfsync always, nothing acknowledged is lost; with appendfsync
// everysec (Redis' default for AOF) a Redis crash loses up to about a second
// of changes; without persistence a Redis restart loses everything. Replicas
// are asynchronous, so by default (WithAckReplicas, AckAuto) every write
// waits, before the store answers for it, until the primary's replicas have
// it (WAIT; ack.go): a failover then keeps every change the store answered
// for. With WithAckReplicas(0) a failover may lose the last changes the old
// master acknowledged. A write the replicas do not confirm within the ack
// timeout fails with CodeUnavailable, though it may have been made.
// Whatever a failover loses, its tickets are not handed out again: each
// process keeps the highest ticket and pre-queue entry number it has seen
// of each room (from its answers and every process's events), and a script
// that finds the room's counter below it moves the counter past it first
// (rewind.go; Store.Rewinds counts these repairs).
//
// Redis must not evict the store's keys: run it with maxmemory-policy
// noeviction (the default), so a full Redis refuses writes (CodeUnavailable)
// rather than silently dropping sessions. A waiting session takes about
// 450 bytes of Redis memory; an ended one about 350 (its hash, kept for the
// history retention, default 24h, and its history entry), so budget for
// every session that ended within the retention, or shorten it.
//
// go-redis sends a command again when a connection breaks before its reply
// arrives, so a script may run twice. Presence, Leave, PutRoom and Join
// answer the same the second time: every room remembers the secrets of its
// last 20,000 joins (a hash and a list, about 100 bytes each), and a join
// that finds its own secret answers with the session it made. Advance may
// advance twice and DeleteRoom may answer room_not_found. Give the client
// MaxRetries -1 to rule that out, at the price of more errors during
// failovers.
//
// # Pipelining
//
// Operations that arrive while earlier ones are in flight go out together
// as one pipeline of script runs (WithPipelines sets how many pipelines run
// at once), and the joins of one room in a pipeline become one script run
// that gives them consecutive tickets in arrival order (not in a room with
// tiers, nor joins with a tier, token uses or a contact: those run one by one). Each
// operation is still atomic and exact on its own; what is shared is the
// round trip, the system calls and the script's fixed cost, which bound a
// busy store. On an idle store an operation goes out at once, alone.
//
// # Events
//
// Each script publishes a compact message of its changes on the room's
// channel (<prefix>:{<room>}:ev) in the same atomic step, tagged with the
// process id. Subscribe delivers this process's own events synchronously
// after the script returns (Remote false), and other processes' events as
// they arrive over pub/sub (Remote true). Standalone Redis uses PUBLISH and
// one PSUBSCRIBE; Cluster uses sharded pub/sub (SPUBLISH, and one SSUBSCRIBE
// connection per room: a go-redis cluster subscription follows one slot),
// unless WithShardedPubSub(false). In sharded mode a process follows a room
// from when it hears of it (the rooms set when Subscribe is first called, a
// control channel when a room is created, a re-read every few seconds) or
// uses it, whichever comes first; a call on a room returns only once the
// room is followed, so a consumer that reads after a call misses nothing.
// Pub/sub is at-most-once: after a subscription connection is
// re-established, and when a room is discovered rather than used, a
// synthetic event per room (Kind EventSessions, no Changes, fresh totals)
// tells consumers to read afresh.
//
// # Webhooks
//
// The Store is a waitroom.Hooks outbox (hooks.go, hooks.lua). A room with
// webhooks has a flag in its hash, which the scripts read with the rest of
// it, so a room without pays one more hash field a run; the script of each
// change of a room with the flag also appends the change's event message
// to the room's outbox stream (:ob) in the same atomic step, so an event is
// in the outbox exactly when its change happened. ClaimDeliveries takes
// outbox entries in: it decodes them, makes their webhook messages
// (waitroom.HookMessages) and, in one script run, takes the entries that
// are still there out of the stream and makes a delivery of each message
// to each webhook that wants it, so of processes claiming at once exactly
// one takes each entry in. Pending deliveries are a sorted set per
// webhook (:hq:<name>) scored by when they are due; a claim re-scores
// them to when its lease ends. A message's ID comes from its outbox
// entry's id, which the stream, never deleted (only emptied), never gives
// twice. The set <prefix>:hookrooms lists the rooms with webhooks, kept
// like the rooms set. An outbox nobody claims from grows without bound:
// run a deliverer (package webhook) wherever webhooks are configured.
//
// # Scheduled rooms
//
// A room with opens_at gets a secret 32-byte seed once (kept in the room's
// draw hash, never changed; its SHA-256 is the published commitment).
// Joins before the opening enter a pre-queue (a hash of entry number →
// secret, joined, key; about 150 bytes an entrant) and get entry ids; keys
// stay unique across pre-queue and line. The first operation at or after
// the opening freezes the room and answers "draw"; the process then reads
// the seed and the pre-queue, orders it by HMAC-SHA256 (Lua has no SHA-256)
// and applies the order in steps of 10,000 entrants, several steps to a
// round trip, each step a script run, so Redis is never held long; then it
// runs the operation again. While a room is frozen every operation on it
// waits for the draw. Any process can finish a draw another began (all
// compute the same order from the same frozen state, and each step applies
// once), so a process that dies mid-draw holds the room up only until its
// draw lease (30s) lapses. A draw of 100,000 entrants takes about 1.5s on
// a small machine (BenchmarkDraw100k). The draw's events carry every
// entrant's ticket, in messages of up to 10,000 changes; only this
// process's own events carry the draw state (Event.Draw): the seed never
// goes over pub/sub. schedule.go and schedule.lua hold the details.
//
// # Holding places
//
// A held session keeps its contact in its hash; an invited one sits in
// :active, so it holds a slot, with its claim window's end in :due.
// Telling sessions they are near costs a room without notify_at nothing;
// with it, an operation looks only where untold sessions may have come
// within notify_at (a join, a Front, the positions the sessions that left
// the line uncovered), and a draw or a raised notify_at looks at all of
// them, at most MaxNotifyAt sessions (holds.lua).
//
// # Sweeping
//
// Sweep takes a short per-room lease (default 3s, renewed by every sweep of
// the holder), so that of many processes running a sweeper only one sweeps
// each room; the others' Sweep returns at once with a zero result until the
// lease lapses, and then one of them takes over. Requests still settle at
// their own now, so correctness never depends on the lease. A script handles
// at most a batch (default 1,000) of due sessions per run; when more are
// due the operation runs the script again until they are done, so Redis is
// never blocked for long by expiry. Ending the line and pre-queue of a room
// that sold out is batched the same way (stock.go). Work that is
// proportional to a room's size is still done in one run: a forced
// DeleteRoom ends every live session, a PutRoom that changes the timeouts
// plans every deadline afresh, one that adds or removes an inventory
// clears every unit, and a Stock sale of n units takes them in one run
// (memstore does the same, under its room lock).
package redisstore
