package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/waitroom/waitroom/server"
)

// applyRoomsOnHangup applies the rooms file again on each SIGHUP, as
// daemons reload their configuration, until ctx ends or stop is called.
// Without a rooms file, SIGHUP is left as it was. ApplyRooms logs what it
// did, or why the file was refused (then no room changed).
func applyRoomsOnHangup(ctx context.Context, srv *server.Server, file string) (stop func()) {
	if file == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_, _ = srv.ApplyRooms(ctx) // logged by ApplyRooms
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done // an application in progress ends first: the store closes next
	}
}
