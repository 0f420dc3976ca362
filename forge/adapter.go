package forge

import (
	"net/http"
	"net/url"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Options configure a forge adapter (forge/gitea, forge/gitlab).
type Options struct {
	Timeout    time.Duration // per call; default 30s
	HTTPClient *http.Client  // default: a client of the adapter's own
	// ReviewToken is the token of the account that gives review verdicts
	// (ReviewPullRequest) and makes no other call. Empty: the service's
	// token reviews, and neither forge takes its verdict on the pull
	// requests it opened, which are the service's own (Gitea refuses it;
	// see each adapter's ReviewPullRequest); reviewing those takes a
	// second account with write access to the repositories.
	ReviewToken string
}

// Check refuses, before an adapter is made, a base URL that is not
// http(s)://host[:port][/path] and an empty token, as wq.EINVALID naming
// the forge's kind ("gitea", "gitlab"); and sets the default timeout.
func (o *Options) Check(kind, baseURL, token string) error {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return wq.Errorf(wq.EINVALID, "%s url: want http(s)://host, got %q", kind, baseURL)
	}
	if token == "" {
		return wq.Errorf(wq.EINVALID, "%s: empty token", kind)
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return nil
}

// FileRead is ReadFile's answer from a read of the file: its content and
// true; a not-found answer is a file that is not there (nil, false, nil);
// any other error is returned.
func FileRead(content []byte, err error) ([]byte, bool, error) {
	if wq.IsForgeError(err, wq.ForgeNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return content, true, nil
}
