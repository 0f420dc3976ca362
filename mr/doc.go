// Package mr is the merge-request item type (DESIGN section 6): a caller's
// file changes become one commit on a branch and a merge request that the
// service sees through.
//
// This package holds the type's pure parts first: the file actions a
// caller submits and Inspect, which refuses unsafe changes before anything
// is stored or any forge is called.
package mr
