package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// secrets: the service's own secrets, made once and shared.
func secrets(t *testing.T, open func(t *testing.T) wq.Store) {
	secretStore := func(t *testing.T) wq.SecretStore {
		t.Helper()
		s := open(t)
		ss, ok := s.(wq.SecretStore)
		if !ok {
			t.Fatalf("%T keeps no secrets", s)
		}
		return ss
	}
	t.Run("the first value stored under a name is the one every later call gets", func(t *testing.T) {
		s := secretStore(t)
		got, err := s.GetOrCreateSecret(ctx, "cookie", []byte("first\x00\xff"), T0)
		if err != nil || !bytes.Equal(got, []byte("first\x00\xff")) {
			t.Fatalf("first call: %q, %v; want the value given, bytes intact", got, err)
		}
		if got, err := s.GetOrCreateSecret(ctx, "cookie", []byte("second"), T0.Add(time.Hour)); err != nil || string(got) != "first\x00\xff" {
			t.Errorf("second call: %q, %v; want the first value", got, err)
		}
		if got, err := s.GetOrCreateSecret(ctx, "other", []byte("its own"), T0); err != nil || string(got) != "its own" {
			t.Errorf("another name: %q, %v", got, err)
		}
	})
	t.Run("callers racing on a name all get the one value stored", func(t *testing.T) {
		s := secretStore(t)
		const racers = 8
		got := make([][]byte, racers)
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() { got[i], errs[i] = s.GetOrCreateSecret(ctx, "raced", []byte(fmt.Sprintf("value-%d", i)), T0) })
		}
		wg.Wait()
		for i := range racers {
			if errs[i] != nil || !bytes.Equal(got[i], got[0]) {
				t.Errorf("racer %d: %q, %v; racer 0 got %q", i, got[i], errs[i], got[0])
			}
		}
	})
	t.Run("a secret needs a name and a value", func(t *testing.T) {
		s := secretStore(t)
		_, err := s.GetOrCreateSecret(ctx, "", []byte("v"), T0)
		wantCode(t, err, wq.EINVALID)
		_, err = s.GetOrCreateSecret(ctx, "empty", nil, T0)
		wantCode(t, err, wq.EINVALID)
	})
}
