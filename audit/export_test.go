package audit

import "context"

// FlushQueued is Run's write after a linger: the entries queued when it
// began.
func FlushQueued(h *History) { h.flush(context.Background(), false) }
