// Package packaging holds the tests of what a release ships: make release's
// static, stamped binaries and their SHA256SUMS, and make image's container
// image (its user, entrypoint, port, volume and health check, and the binary
// inside it answering version with a revision). It has no code of its own.
package packaging
