// Package herder decides whether a failed CI job failed for a known
// transient reason and, if so, whether and when to retry it (DDR-47).
//
// The rules are a tree of matchers in the manner of the CKI project's
// pipeline-herder, reduced to the fields workqueue needs: name,
// description, job_name, failure_reason, messages, tail_lines,
// retry_delays, retry_limit and nested matchers. The package is pure: it
// reads no forge and no file; the caller hands Match the job and a
// function that fetches the job's log.
//
// Parse (rules.go) reads a rules document strictly; Rules.Compile
// (compile.go) validates it into a Herder, each problem a FieldError
// naming its field. Herder.Match (match.go) gives a failed job's Verdict,
// reading the log only if it must; Herder.Delay gives, without the log,
// when a retry would be due.
//
// # Semantics
//
// Patterns. A pattern written between slashes ("/exit code 13[79]/") is a
// Go regular expression (RE2 syntax), searched for anywhere in the text
// in multi-line mode, so ^ and $ match at line boundaries. Any other
// pattern is literal. For job_name and failure_reason a literal must equal
// the whole value ("runner_system_failure"); write a regex
// ("/^test /") for a prefix or substring. For messages a literal is
// searched for as a substring of the log, since a log has many lines
// around the one that matters. The empty pattern and the empty regex "//"
// are refused: both would match everything.
//
// Conditions. A matcher's job_name, failure_reason and messages are all
// conditions and all must hold; an unset condition holds for every job.
// messages hold when any one of them occurs in the window; an empty
// messages list means the log is not looked at. Only jobs whose status is
// failed are matched at all.
//
// Windowing. tail_lines N restricts a matcher's messages to the last N
// lines of the log (a trailing newline does not start a line of its own);
// 0 or unset searches the whole log the caller fetched. A message outside
// the window does not fire. Colour escapes are removed and CR LF read as
// LF before matching, so a literal copied from the rendered log matches.
//
// Nesting. A matcher with matchers is a group: it never fires itself, only
// through one of its children, and its conditions must hold too; a child
// narrows its parent and cannot widen it (each level's messages are
// searched within that level's own window). This differs from CKI, where a
// child's fields replace the parent's; conjunction was chosen so that a
// group such as "only the build jobs" cannot be escaped by a child. The
// settings description, tail_lines, retry_delays and retry_limit are
// inherited: a matcher that sets none (an empty list counts as none)
// takes its nearest ancestor's, then the top level's (Rules.RetryDelays,
// Rules.RetryLimit), and finally 3 retries, as CKI documents, at once (no
// delays). Write retry_delays: [0s] under a parent with delays to retry at
// once. A leaf whose path sets no condition at all would retry every
// failed job and is refused.
//
// Order. Leaves are tried in document order, depth first; the first whose
// conditions all hold wins. The cheap conditions (job_name,
// failure_reason) of a leaf are checked before its messages, and the log
// is fetched only when a leaf that passed them has messages to search;
// it is fetched at most once per Match.
//
// Retries. A matched job is retried while job.Retries < retry_limit
// (0 disables retrying). The delay before retry number job.Retries+1 is
// retry_delays[job.Retries], the last delay repeating when the list is
// shorter and 0 when it is empty.
package herder
