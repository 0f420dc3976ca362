package httpapi

import (
	"github.com/workqueue-dev/workqueue/api"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

// The incident bridge's domain values as the API's wire types (package
// api), and the wire's requests as the domain takes them. The control
// plane's values need no mapping: the domain and the wire share them
// (package cptype). Each mapping keeps a nil slice nil and an empty one
// empty, so that an answer says null or [] as it always did.

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

// abandonProof is a wire proof as the control plane takes it: none is
// no claim at all.
func abandonProof(p *api.AbandonProof) cp.AbandonProof {
	if p == nil {
		return cp.AbandonProof{}
	}
	return cp.AbandonProof{DeadProcess: p.DeadProcess, MissingWorktree: p.MissingWorktree, NoLiveMutationRisk: p.NoLiveMutationRisk,
		NoOpenPR: p.NoOpenPR, OperatorAuthorized: p.OperatorAuthorized}
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
