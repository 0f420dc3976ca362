// Package testkit holds small things many packages' tests need alike.
package testkit

import (
	"io"
	"log/slog"
)

// Quiet is a logger that writes nowhere, for the parts under test.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
