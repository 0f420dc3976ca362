// Package forge holds what the forge adapters (forge/gitea, forge/gitlab)
// share: the one table that turns a forge's HTTP answer into a
// *workqueue.ForgeError, so that both forges' refusals mean the same thing
// to the executors. Where the two forges genuinely answer alike calls
// differently, the table says so per operation, with the reason. They
// also share the refusals both make alike before sending anything (an
// empty comment, a verdict that cannot be given as asked, one by the pull
// request's own author, and a base URL or token New cannot use), so that
// the same call is refused the same way on either forge.
package forge
