// Package deps pins modules that packages still being written will import.
// It is removed once they do.
package deps

import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
