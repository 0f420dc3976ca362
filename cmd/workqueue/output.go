package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/client"
)

// Exit codes, the same for every command (documented in the root
// command's help):
const (
	exitOK        = 0 // done; the item completed
	exitFailed    = 1 // the item failed or was cancelled, a check found problems, or the server refused
	exitUsage     = 2 // the command line is wrong: an unknown flag, a missing argument
	exitTransport = 3 // the server was unreachable, or the token was missing or refused
)

// outputFormats are the values of -o: table (for people, the default),
// json and yaml (the API's JSON, or the same as YAML, for scripts).
var outputFormats = []string{"table", "json", "yaml"}

// addOutputFlag registers -o on cmd.
func addOutputFlag(flags interface {
	StringVarP(p *string, name, shorthand, value, usage string)
}, p *string) {
	flags.StringVarP(p, "output", "o", "table", "output format: table, json or yaml")
}

// checkOutput refuses an unknown -o value; text is the old name of table.
func checkOutput(format *string) error {
	if *format == "text" {
		*format = "table"
	}
	if !slices.Contains(outputFormats, *format) {
		return usageErrorf("--output: want table, json or yaml, got %q", *format)
	}
	return nil
}

// printOutput prints v as format asks: JSON or YAML of v's JSON, or for
// table what table writes.
func printOutput(w io.Writer, format string, v any, table func(io.Writer)) error {
	switch format {
	case "json":
		return printJSON(w, v)
	case "yaml":
		return printYAML(w, v)
	}
	table(w)
	return nil
}

// printYAML prints v's JSON form as YAML, so that its keys are the API's.
func printYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// exitError ends the command with an exit status, having printed its
// answer (config check's problems, a gate's refusal).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// transportError is a failure to reach the server or to be let in by
// it: exit status 3.
type transportError struct{ err error }

func (e transportError) Error() string { return e.err.Error() }
func (e transportError) Unwrap() error { return e.err }

// itemFailedError says that an item a command waited for failed or was
// cancelled: exit status 1.
type itemFailedError struct{ item *api.Item }

func (e itemFailedError) Error() string {
	msg := fmt.Sprintf("item %s %s", e.item.ID, e.item.Phase)
	if e.item.Reason != "" {
		msg += ": " + e.item.Reason
	}
	if e.item.Error != "" {
		msg += ": " + e.item.Error
	}
	return msg
}

// exitCode is the exit status an error of a command stands for.
func exitCode(err error) int {
	var exit exitError
	var usage usageError
	var transport transportError
	var cerr *client.Error
	var uerr *url.Error
	var nerr net.Error
	var perr *fs.PathError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &exit):
		return exit.code
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, &transport):
		return exitTransport
	case wq.ErrorCode(err) == wq.EUNAVAILABLE:
		// A database or forge that does not answer (issue 29: migrate
		// against an unreachable PostgreSQL).
		return exitTransport
	case errors.As(err, &cerr):
		switch cerr.Problem.Code {
		case wq.EUNAUTHORIZED, wq.EFORBIDDEN, wq.EUNAVAILABLE:
			return exitTransport
		}
		return exitFailed
	case errors.As(err, &uerr):
		return exitTransport
	case errors.As(err, &perr):
		// A file the command could not read or write. Checked before
		// net.Error, which its errno also satisfies.
		return exitFailed
	case errors.As(err, &nerr):
		return exitTransport
	}
	return exitFailed
}

// errorProblem is a command's error as a problem document, what -o json
// prints on stderr: the server's own when it answered with one.
func errorProblem(err error) api.Problem {
	var cerr *client.Error
	if errors.As(err, &cerr) {
		return cerr.Problem
	}
	p := api.Problem{Type: "about:blank", Detail: err.Error(), Code: wq.EINTERNAL}
	switch exitCode(err) {
	case exitUsage:
		p.Title, p.Code = "usage", wq.EINVALID
	case exitTransport:
		p.Title, p.Code = "transport", wq.EUNAVAILABLE
	default:
		p.Title = "failed"
		var failed itemFailedError
		if errors.As(err, &failed) {
			p.Code, p.Reason = wq.ECONFLICT, string(failed.item.Phase)
		}
	}
	return p
}

// reportError prints a command's error on stderr, as a problem document
// when the command's output is JSON, and returns the exit status.
func reportError(stderr io.Writer, cmd *cobra.Command, err error) int {
	code := exitCode(err)
	var exit exitError
	if errors.As(err, &exit) {
		return code // the command printed its answer already
	}
	err = asUnreachable(cmd, err)
	if cmd != nil {
		if f := cmd.Flags().Lookup("output"); f != nil && f.Value.String() == "json" {
			p := errorProblem(err)
			b, _ := json.Marshal(p)
			fmt.Fprintln(stderr, string(b))
			return code
		}
	}
	fmt.Fprintln(stderr, "workqueue:", err)
	printUnreachable(stderr, cmd, err)
	var cerr *client.Error
	if errors.As(err, &cerr) && len(cerr.Problem.Refusals) > 1 {
		// Every refusal, one a line: the caller fixes them in one go.
		for _, r := range cerr.Problem.Refusals {
			fmt.Fprintln(stderr, "  refused:", r.Error())
		}
	}
	return code
}

// flagError says a flag's bad value in the command line's terms: the
// flag library's own message names the Go parser that refused it
// ("strconv.ParseInt: parsing ...").
func flagError(err error) error {
	var invalid *pflag.InvalidValueError
	if !errors.As(err, &invalid) {
		return err
	}
	want := map[string]string{
		"int": "a whole number", "int64": "a whole number", "uint": "a whole number", "bool": "true or false",
		"duration": "a duration such as 30s or 5m", "float64": "a number",
	}[invalid.GetFlag().Value.Type()]
	if want == "" {
		want = "a valid value"
	}
	return fmt.Errorf("--%s: want %s, got %q", invalid.GetFlag().Name, want, invalid.GetValue())
}

// wrapUsage makes every argument and flag error of cmd and its
// subcommands a usage error (exit status 2), and an unknown subcommand
// of a command group one too.
func wrapUsage(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagError(err)} })
	if cmd.HasParent() && cmd.HasSubCommands() && !cmd.Runnable() {
		// Cobra prints a group's help and succeeds whatever follows
		// it; the root alone says "unknown command" (issue 29).
		cmd.RunE = unknownSubcommand
	}
	cmd.SuggestFor = append(cmd.SuggestFor, otherNames[cmd.Name()]...)
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, c := range cmd.Commands() {
		wrapUsage(c)
	}
}

// otherNames are the words other CLIs (gh, glab, kubectl) use for a
// command, suggested for it when typed.
var otherNames = map[string][]string{"show": {"get", "view", "describe"}, "list": {"ls"}, "cancel": {"close", "stop"}}

// unknownSubcommand is a command group's run: its help when no
// subcommand is given, else a usage error naming the closest ones.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only for the root
	}
	if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", strings.Join(suggestions, `" or "`))
	}
	return usageErrorf("%s\nRun '%s --help' for its commands.", msg, cmd.CommandPath())
}
