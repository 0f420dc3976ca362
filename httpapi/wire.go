package httpapi

import (
	"github.com/workqueue-dev/workqueue/api"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

// The control plane's and the incident bridge's domain values as the
// API's wire types (package api), and the wire's requests as the domain
// takes them. Each mapping keeps a nil slice nil and an empty one empty,
// so that an answer says null or [] as it always did.

// wired is v as its wire type, or err.
func wired[D, W any](v D, err error, to func(D) W) (any, error) {
	if err != nil {
		return nil, err
	}
	return to(v), nil
}

// mapSlice is each of in as to makes it; nil stays nil.
func mapSlice[D, W any](in []D, to func(*D) W) []W {
	if in == nil {
		return nil
	}
	out := make([]W, len(in))
	for i := range in {
		out[i] = to(&in[i])
	}
	return out
}

func sessionOf(v *cp.SessionView) *api.SessionView {
	if v == nil {
		return nil
	}
	s := sessionValue(v)
	return &s
}

func sessionValue(v *cp.SessionView) api.SessionView {
	return api.SessionView{Session: api.Session{ID: v.ID, Identity: v.Identity, Name: v.Name, Role: api.Role(v.Role),
		Capabilities: v.Capabilities, CreatedAt: v.CreatedAt, HeartbeatAt: v.HeartbeatAt, EndedAt: v.EndedAt},
		Status: api.SessionStatus(v.Status)}
}

func workOf(w *cp.Work) *api.Work {
	if w == nil {
		return nil
	}
	v := workValue(w)
	return &v
}

func workValue(w *cp.Work) api.Work {
	return api.Work{ID: w.ID, WorkKey: api.WorkKey{Forge: w.Forge, Repo: w.Repo, Kind: api.Kind(w.Kind), Number: w.Number},
		State: api.State(w.State), Title: w.Title, Labels: w.Labels, Author: w.Author, HeadSHA: w.HeadSHA,
		ReviewState: api.ReviewState(w.ReviewState), Mergeable: w.Mergeable, LinkedIssues: w.LinkedIssues,
		AuthorSession: w.AuthorSession, UpdatedAt: w.UpdatedAt, SyncedAt: w.SyncedAt}
}

func syncReportOf(r *cp.SyncReport) *api.SyncReport {
	if r == nil {
		return nil
	}
	return &api.SyncReport{Started: r.Started, Finished: r.Finished, Repos: mapSlice(r.Repos, func(s *cp.RepoSync) api.RepoSync {
		return api.RepoSync{Forge: s.Forge, Repo: s.Repo, Open: s.Open, Reread: s.Reread, Closed: s.Closed, Dropped: s.Dropped, Err: s.Err}
	})}
}

func allocationOf(a *cp.Allocation) *api.Allocation {
	if a == nil {
		return nil
	}
	out := &api.Allocation{Outcome: api.Outcome(a.Outcome), Work: workOf(a.Work),
		Candidates: mapSlice(a.Candidates, func(c *cp.CandidateSkip) api.CandidateSkip {
			return api.CandidateSkip{Work: workOf(c.Work), Reason: c.Reason}
		})}
	if a.Lease != nil {
		out.Lease = &api.LeaseRef{ID: a.Lease.ID, ExpiresAt: a.Lease.ExpiresAt}
	}
	if as := a.Assignment; as != nil {
		out.Assignment = &api.AssignmentRef{ID: as.ID, ExpectedHeadSHA: as.ExpectedHeadSHA,
			AllowedActions: mapSlice(as.AllowedActions, func(a *cp.Action) api.Action { return api.Action(*a) })}
	}
	return out
}

func decisionOf(d cp.Decision) api.Decision {
	return api.Decision{Allowed: d.Allowed, Reason: d.Reason, HeadChecked: d.HeadChecked}
}

func actionResultOf(r *cp.ActionResult) *api.ActionResult {
	if r == nil {
		return nil
	}
	return &api.ActionResult{Action: api.Action(r.Action), Work: workOf(r.Work), CommentID: r.CommentID, HeadSHA: r.HeadSHA, Released: r.Released}
}

// actionRequest is a wire action request as the control plane takes it.
func actionRequest(r *api.ActionRequest) cp.ActionRequest {
	return cp.ActionRequest{SessionID: r.SessionID, AssignmentID: r.AssignmentID, Action: cp.Action(r.Action), Body: r.Body, Verdict: r.Verdict}
}

func leaseValue(l *cp.Lease) api.Lease {
	return api.Lease{ID: l.ID, WorkID: l.WorkID, SessionID: l.SessionID, AssignmentID: l.AssignmentID, State: api.LeaseState(l.State),
		CreatedAt: l.CreatedAt, HeartbeatAt: l.HeartbeatAt, ExpiresAt: l.ExpiresAt, EndedAt: l.EndedAt,
		WorktreePath: l.WorktreePath, HeadSHA: l.HeadSHA,
		AdoptedFromSessionID: l.AdoptedFromSessionID, AdoptedBySessionID: l.AdoptedBySessionID}
}

func leaseViewOf(v *cp.LeaseView) *api.LeaseView {
	if v == nil {
		return nil
	}
	return &api.LeaseView{Lease: leaseValue(&v.Lease), SafeNextAction: v.SafeNextAction,
		Freshness: api.Freshness{Live: v.Freshness.Live, ExpiresIn: v.Freshness.ExpiresIn, SinceBeat: v.Freshness.SinceBeat}}
}

// abandonProof is a wire proof as the control plane takes it: none is
// no claim at all.
func abandonProof(p *api.AbandonProof) cp.AbandonProof {
	if p == nil {
		return cp.AbandonProof{}
	}
	return cp.AbandonProof{DeadProcess: p.DeadProcess, MissingWorktree: p.MissingWorktree, NoLiveMutationRisk: p.NoLiveMutationRisk,
		NoOpenPR: p.NoOpenPR, OperatorAuthorized: p.OperatorAuthorized}
}

func checkpointOf(c *cp.Checkpoint) *api.Checkpoint {
	if c == nil {
		return nil
	}
	v := checkpointValue(c)
	return &v
}

func checkpointValue(c *cp.Checkpoint) api.Checkpoint {
	return api.Checkpoint{SchemaVersion: c.SchemaVersion, SessionID: c.SessionID, ProviderIdentity: c.ProviderIdentity,
		Role: api.Role(c.Role), Forge: c.Forge, Repo: c.Repo, WorkKind: api.Kind(c.WorkKind), WorkNumber: c.WorkNumber,
		WorktreePath: c.WorktreePath, Branch: c.Branch, HeadSHA: c.HeadSHA, Capabilities: c.Capabilities,
		LeaseID: c.LeaseID, AssignmentID: c.AssignmentID, WorkflowStage: c.WorkflowStage,
		LastCompletedAction: c.LastCompletedAction, CurrentOperation: c.CurrentOperation, PendingMutation: c.PendingMutation,
		Evidence: c.Evidence, Blocker: c.Blocker, NextValidAction: c.NextValidAction, RecoveryInstructions: c.RecoveryInstructions,
		Status: c.Status, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// checkpointIn is a wire checkpoint as the control plane takes it.
func checkpointIn(c *api.Checkpoint) cp.Checkpoint {
	return cp.Checkpoint{SchemaVersion: c.SchemaVersion, SessionID: c.SessionID, ProviderIdentity: c.ProviderIdentity,
		Role: cp.Role(c.Role), Forge: c.Forge, Repo: c.Repo, WorkKind: cp.Kind(c.WorkKind), WorkNumber: c.WorkNumber,
		WorktreePath: c.WorktreePath, Branch: c.Branch, HeadSHA: c.HeadSHA, Capabilities: c.Capabilities,
		LeaseID: c.LeaseID, AssignmentID: c.AssignmentID, WorkflowStage: c.WorkflowStage,
		LastCompletedAction: c.LastCompletedAction, CurrentOperation: c.CurrentOperation, PendingMutation: c.PendingMutation,
		Evidence: c.Evidence, Blocker: c.Blocker, NextValidAction: c.NextValidAction, RecoveryInstructions: c.RecoveryInstructions,
		Status: c.Status, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

func checkpointReconcileOf(r *cp.CheckpointReconcile) *api.CheckpointReconcile {
	if r == nil {
		return nil
	}
	d := r.Diagnosis
	return &api.CheckpointReconcile{Checkpoint: checkpointOf(r.Checkpoint), HeadSource: r.HeadSource,
		Diagnosis: api.Diagnosis{Stale: d.Stale, HeadMismatch: d.HeadMismatch, LeaseMismatch: d.LeaseMismatch,
			HeadChecked: d.HeadChecked, LeaseChecked: d.LeaseChecked, ReconcileAction: d.ReconcileAction, Reason: d.Reason}}
}

// checkpointKey is a wire checkpoint key as the control plane takes it.
func checkpointKey(k *api.CheckpointKey) cp.CheckpointKey {
	return cp.CheckpointKey{Forge: k.Forge, Repo: k.Repo, SessionID: k.SessionID, WorkKind: cp.Kind(k.WorkKind), WorkNumber: k.WorkNumber}
}

// observation is a wire observation as the incident bridge takes it.
func observation(o *api.Observation) incident.Observation {
	return incident.Observation{Key: incident.Key{Provider: o.Provider, Organization: o.Organization, Project: o.Project,
		Environment: o.Environment, Fingerprint: o.Fingerprint},
		Title: o.Title, Culprit: o.Culprit, Level: o.Level, Status: o.Status, EventCount: o.EventCount, Permalink: o.Permalink,
		FirstSeen: o.FirstSeen, LastSeen: o.LastSeen, LinkedPRs: o.LinkedPRs}
}

func incidentResultOf(r *incident.Result) *api.IncidentResult {
	if r == nil {
		return nil
	}
	out := &api.IncidentResult{Outcome: api.IncidentOutcome(r.Outcome), Forge: r.Forge, Repo: r.Repo, Reason: r.Reason}
	if p := r.Issue; p != nil {
		out.Issue = &api.IssuePlan{Title: p.Title, Body: p.Body, Labels: p.Labels}
	}
	if l := r.Link; l != nil {
		out.Link = &api.IncidentLink{ID: l.ID, IncidentKey: api.IncidentKey{Provider: l.Provider, Organization: l.Organization,
			Project: l.Project, Environment: l.Environment, Fingerprint: l.Fingerprint},
			Forge: l.Forge, Repo: l.Repo, IssueNumber: l.IssueNumber, IssueURL: l.IssueURL, Status: l.Status,
			EventCount: l.EventCount, Permalink: l.Permalink, FirstSeen: l.FirstSeen, LastSeen: l.LastSeen,
			LinkedPRs: l.LinkedPRs, State: string(l.State), ClaimedAt: l.ClaimedAt, Revision: l.Revision,
			CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}
	}
	return out
}
