package forgetest

import (
	"net/http"
	"sync/atomic"
)

// CountingClient is an HTTP client for a Forge under test that counts the
// requests it sends; calls reports the count so far (Project.Calls).
func CountingClient() (client *http.Client, calls func() int64) {
	var n atomic.Int64
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Transport: countingTransport{base: base, n: &n}}, n.Load
}

type countingTransport struct {
	base http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}
