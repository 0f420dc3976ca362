// Package forge holds what the forge adapters (forge/gitea, forge/gitlab)
// share: the one table that turns a forge's HTTP answer into a
// *workqueue.ForgeError, so that both forges' refusals mean the same thing
// to the executors. Where the two forges genuinely answer alike calls
// differently, the table says so per operation, with the reason.
package forge
