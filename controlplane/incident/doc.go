// Package incident is the control plane's incident bridge (seed 003,
// #612; issue 12): it turns what Sentry and GlitchTip observe into
// ordinary forge issues, and remembers which forge issue stands for which
// provider issue in an incident link.
//
// The seed's hard rules this package keeps in code:
//
//   - Rule 1: incidents are never work. The bridge files a forge issue and
//     writes a link; it never writes the control plane's work inventory.
//     The allocator sees an incident only once the forge issue exists, as
//     any other issue, through the inventory's sync or the forge's
//     webhooks. Links refer to nothing in cp_work.
//   - Rule 6: a scope key the provider did not give (organization,
//     project, environment) is the empty string, never NULL, in
//     observations, links and the store, so that the unique key
//     (provider, organization, project, environment, fingerprint) is
//     canonical: two observations of one provider issue always meet on
//     one row.
//   - Rule 7: links of the old tool, whose scope keys could be NULL, are
//     imported collapsed (CollapseLegacy, Store.ImportLegacy): duplicates
//     are folded only when their forge issue and every meaningful
//     observation field agree; otherwise the import fails naming the rows
//     and fields, and nothing is written or deleted.
//
// Provider tokens and DSNs never reach an issue body, a link, a result or
// a log: every text of an observation goes through controlplane/redact,
// and permalinks keep only their scheme, host and path.
//
// Exactly one forge issue per provider issue, however many deliveries
// arrive at once and from however many serve processes share the
// database: Reconcile claims the link first (a unique-key insert), only
// the claimer calls the forge, and it then finishes its claim. See
// Bridge.Reconcile for the stale claim and the window that remains.
package incident
