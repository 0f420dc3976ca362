package gitea

// SetTreePageSize makes f list a directory n entries a call instead of
// TreePageSize, so that the conformance suite's directory of 120 files is
// paged on Gitea as it is on GitLab.
func SetTreePageSize(f *Forge, n int) { f.treePage = n }
