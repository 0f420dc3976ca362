package workqueue

import (
	"context"
	"time"
)

// SecretStore keeps secrets the service makes for itself, by name, in
// the database, so that every instance on one database shares them (the
// dashboard's cookie key when none is configured). Both drivers
// implement it.
type SecretStore interface {
	// GetOrCreateSecret returns the value stored under name, storing
	// value (made by the caller, at now) first when there is none. Of
	// callers racing on one name, on any instance, every one gets the
	// value stored first. EINVALID for an empty name or value;
	// EUNAVAILABLE.
	GetOrCreateSecret(ctx context.Context, name string, value []byte, now time.Time) ([]byte, error)
}
