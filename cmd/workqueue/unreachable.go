package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/workqueue-dev/workqueue/client"
)

// unreachableError is a client command's failure to reach the workqueue
// server at all (connection refused, a name that does not resolve, no
// answer in time), said in words: what happened and what to check. The
// Go error chain stays underneath, printed with --verbose (issue 55).
type unreachableError struct {
	server string // scheme://host[:port] the command called
	what   string // what happened, in words
	err    error
}

func (e unreachableError) Error() string {
	return fmt.Sprintf("cannot reach the workqueue server at %s: %s", e.server, e.what)
}
func (e unreachableError) Unwrap() error { return e.err }

// hint is what to check, one line.
func (e unreachableError) hint() string {
	from := "--server, else $WORKQUEUE_URL, else the server of 'workqueue login', else " + defaultServer
	if env := os.Getenv("WORKQUEUE_URL"); env != "" {
		from = "--server, else $WORKQUEUE_URL (" + env + ")"
	}
	return "is 'workqueue serve' running there, and is this its address? The server is " + from + "."
}

// asUnreachable returns err said as an unreachableError when it is a
// client command's failure to connect to its server; otherwise err. A
// command is a client command when it has --server; an answer of the
// server (a client.Error) is never one.
func asUnreachable(cmd *cobra.Command, err error) error {
	if cmd == nil || cmd.Flags().Lookup("server") == nil {
		return err
	}
	var cerr *client.Error
	var uerr *url.Error
	if errors.As(err, &cerr) || !errors.As(err, &uerr) || errors.Is(err, context.Canceled) {
		return err
	}
	server := uerr.URL
	if u, perr := url.Parse(uerr.URL); perr == nil && u.Host != "" {
		server = u.Scheme + "://" + u.Host
	}
	var dns *net.DNSError
	var nerr net.Error
	var what string
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		what = "the connection was refused (nothing listens there)"
	case errors.As(err, &dns) && dns.IsNotFound:
		what = fmt.Sprintf("the host name %q does not resolve", dns.Name)
	case errors.As(err, &dns):
		what = fmt.Sprintf("the host name %q could not be looked up", dns.Name)
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &nerr) && nerr.Timeout()):
		what = "it did not answer in time"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		what = "the connection was closed before an answer (is it a workqueue server, and http or https as it expects?)"
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		what = "no route to that host"
	default:
		var op *net.OpError
		if !errors.As(err, &op) {
			return err // not a connection failure: a TLS or protocol error says itself
		}
		what = "the connection failed"
	}
	return unreachableError{server: server, what: what, err: err}
}

// verbose reports whether the command line asked for --verbose.
func verbose(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	v, _ := cmd.Flags().GetBool("verbose")
	return v
}

// printUnreachable writes what to check and, with --verbose, the error
// chain under an unreachableError's headline.
func printUnreachable(w io.Writer, cmd *cobra.Command, err error) {
	var u unreachableError
	if !errors.As(err, &u) {
		return
	}
	fmt.Fprintln(w, "  check:", u.hint())
	if verbose(cmd) {
		fmt.Fprintln(w, "  detail:", strings.TrimSpace(u.err.Error()))
	} else {
		fmt.Fprintln(w, "  (--verbose shows the underlying error)")
	}
}
