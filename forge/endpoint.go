package forge

import (
	"net/url"

	wq "github.com/workqueue-dev/workqueue"
)

// CheckEndpoint refuses, before an adapter is made, a base URL that is not
// http(s)://host[:port][/path] and an empty token, as wq.EINVALID naming
// the forge's kind ("gitea", "gitlab").
func CheckEndpoint(kind, baseURL, token string) error {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return wq.Errorf(wq.EINVALID, "%s url: want http(s)://host, got %q", kind, baseURL)
	}
	if token == "" {
		return wq.Errorf(wq.EINVALID, "%s: empty token", kind)
	}
	return nil
}
