package httpapi

import (
	"net/http"
	"strconv"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/cptype"
)

// maxCheckpointBody bounds PUT /api/v1/checkpoints: every field at its
// bound fits, with room for JSON's escapes.
const maxCheckpointBody = 256 << 10

// putCheckpoint upserts a checkpoint; the body is the row by its column
// names (times and the schema version are the server's).
func (s *Server) putCheckpoint(w http.ResponseWriter, r *http.Request) {
	if !s.knownParams(w, r, "require_complete") {
		return
	}
	requireComplete, ok := s.boolParam(w, r, "require_complete")
	if !ok {
		return
	}
	var c cptype.Checkpoint
	if !s.decodeBodyUpTo(w, r, &c, maxCheckpointBody) {
		return
	}
	v, err := s.cp.WriteCheckpoint(r.Context(), controlCaller(r), c, requireComplete)
	s.answer(w, r, http.StatusOK, v, err)
}

// listCheckpoints lists checkpoints by session, by work unit, or both;
// all five key fields name one checkpoint.
func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) {
	if !s.knownParams(w, r, "session_id", "forge", "repo", "work_kind", "work_number", "limit") {
		return
	}
	limit, ok := s.limitParam(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := cp.CheckpointFilter{SessionID: q.Get("session_id"), Forge: q.Get("forge"), Repo: q.Get("repo"),
		WorkKind: cp.Kind(q.Get("work_kind")), Limit: limit}
	if n := q.Get("work_number"); n != "" {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 0 {
			s.Error(w, r, wq.Errorf(wq.EINVALID, "work_number: want 0 (the session's own checkpoint) or an issue or pull request number, got %q", n))
			return
		}
		f.WorkNumber, f.HasNumber = v, true
	}
	list, err := s.cp.ListCheckpoints(r.Context(), controlCaller(r), f)
	s.answer(w, r, http.StatusOK, api.CheckpointList{Checkpoints: list}, err)
}

// boolParam reads an optional ?name=true|false.
func (s *Server) boolParam(w http.ResponseWriter, r *http.Request, name string) (bool, bool) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false":
		return false, true
	case "true":
		return true, true
	default:
		s.Error(w, r, wq.Errorf(wq.EINVALID, "%s: want true or false, got %q", name, v))
		return false, false
	}
}
