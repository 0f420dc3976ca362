// Package forge is what every kind of code forge shares, and the one
// place that knows which kinds there are.
//
//   - The registry of kinds (plugin.go): a Plugin per kind carries its
//     client's constructor (Open), its webhook reader (ParseWebhook), the
//     event types its deliveries store and how to read them (EventTypes,
//     DecodeEvent) and how to read a CI job's page (JobPage). A Registry
//     is a value: the program's composition root (cmd/workqueue/registry.go)
//     builds it with one Register line per kind (forge/gitea,
//     forge/gitlab) and passes it to what needs a kind; no package
//     registers a kind by being imported. What a kind's client can do
//     beside wq.Forge is a capability of the client (wq.FileModeSetter,
//     wq.InertTexter, wq.CIJobs, wq.DefaultBrancher). forge/forgetest/relay
//     is a third kind, for tests. Nothing outside forge/ switches on a
//     kind (scripts/check).
//   - Webhooks (webhook.go, event.go): a verified delivery (Delivery,
//     with the inventory's Work and Push), the checks every kind's
//     delivery passes (ParseWebhook), and the forge-neutral events item
//     types read (Event: a merge request changed, a review was given, a
//     pipeline, status or job changed), with the helpers the kinds' readers
//     share (Unmarshal, VerifyHMAC, PushDelivery, PayloadTime).
//   - The one table that turns a forge's HTTP answer into a
//     *workqueue.ForgeError (classify.go), so that every kind's refusals
//     mean the same thing to the executors; where two forges genuinely
//     answer alike calls differently, the table says so per operation,
//     with the reason.
//   - The refusals every adapter makes alike before sending anything
//     (review.go: an empty comment, a verdict that cannot be given as
//     asked, one by the pull request's own author; adapter.go: a base URL
//     or token New cannot use), and the closing references of a text as
//     either forge reads them (closes.go: ClosingReferences, each with the
//     project it names, and ClosingIssues, the same project's).
//   - What reading a tree on given paths takes (tree.go): the
//     directories on the way to them (OnTheWay, WalkTree's descend) and
//     a compare cut down to them (OnPaths), so that what a push reads
//     grows with the change, not with the repository.
//
// forge/forgetest is the conformance suite every adapter passes;
// forge/budget is the request budget every caller of one configured forge
// shares, in its HTTP client's transport.
package forge
