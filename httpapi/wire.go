package httpapi

import (
	"github.com/workqueue-dev/workqueue/api"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

// The wire's requests as the domain takes them, where the two differ (an
// observation, which the bridge validates and redacts; an abandon proof,
// which the event log records in full). The values the server answers
// need no mapping: the domain and the wire share them (packages cptype
// and incidenttype).

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
	return incident.Observation{Key: o.Key, Title: o.Title, Culprit: o.Culprit, Level: o.Level, Status: o.Status, EventCount: o.EventCount, Permalink: o.Permalink,
		FirstSeen: o.FirstSeen, LastSeen: o.LastSeen, LinkedPRs: o.LinkedPRs}
}
