package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/waitroom/waitroom/server"
)

// applyRoomsOnHangup applies the rooms file again on each SIGHUP, as
// daemons reload their configuration, until ctx ends or stop is called.
// ApplyRooms logs what it did, or why the file was refused (then no room
// changed). Without a rooms file there is nothing to reload, but SIGHUP is
// still caught and logged: its default would end the process at once,
// without the graceful stop, so `systemctl reload` (or a stray HUP from a
// closing terminal) would take a live server down.
func applyRoomsOnHangup(ctx context.Context, srv *server.Server, logger *slog.Logger, file string) (stop func()) {
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
				if file == "" {
					logger.Info("SIGHUP: no --rooms file to apply; nothing changed")
					continue
				}
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
