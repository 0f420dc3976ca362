package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/workqueue-dev/workqueue/api"
)

// newIdentitiesCommand is an admin's freeze and unfreeze of an identity
// (package identity; issue 49).
func newIdentitiesCommand() *cobra.Command {
	cmd := clientCommand("identities", "Freeze and unfreeze identities (admin)", `Freeze and unfreeze identities (permission admin on every project).

A frozen identity's control-plane leases end at once (released, reason
identity_frozen); every call it makes but GET /me is refused 403 with
reason identity_frozen, on every instance; and the engine holds its items
before any forge write. Unfreezing serves its calls again and its items
go on where they were, within a minute; its ended leases do not come
back. Every freeze and unfreeze is audited with the old and new state.

An identity is named as GET /me (workqueue whoami) names it:
token:NAME for a static token, a JWT's identity claim, a user name.`, func(f *clientFlags) []*cobra.Command {
		var reason string
		freeze := &cobra.Command{Use: "freeze IDENTITY [--reason TEXT]", Short: "Freeze an identity: end its leases, refuse its calls, hold its items",
			Args:    cobra.ExactArgs(1),
			Example: "  workqueue identities freeze token:ci-bot --reason 'opens a merge request a minute'",
			RunE: func(cmd *cobra.Command, args []string) error {
				var body any
				if reason != "" {
					body = api.FreezeRequest{Reason: reason}
				}
				return call(cmd, f, http.MethodPost, "/api/v1/identities/"+url.PathEscape(args[0])+"/freeze", nil, body, printIdentityState)
			}}
		freeze.Flags().StringVar(&reason, "reason", "", "why, for the audit and for the identity's refusals")
		unfreeze := &cobra.Command{Use: "unfreeze IDENTITY", Short: "Unfreeze an identity: serve its calls, let its items go on",
			Args:    cobra.ExactArgs(1),
			Example: "  workqueue identities unfreeze token:ci-bot",
			RunE: func(cmd *cobra.Command, args []string) error {
				return call(cmd, f, http.MethodPost, "/api/v1/identities/"+url.PathEscape(args[0])+"/unfreeze", nil, nil, printIdentityState)
			}}
		list := &cobra.Command{Use: "frozen", Short: "List the frozen identities", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return call(cmd, f, http.MethodGet, "/api/v1/identities/frozen", nil, nil, func(w io.Writer, out *api.FrozenIdentities) {
					printTable(w, "IDENTITY\tBY\tAT\tREASON", len(out.Identities), func(i int) []any {
						fr := out.Identities[i]
						return []any{fr.Identity, fr.By, fr.At.Format(time.RFC3339), fr.Reason}
					})
				})
			}}
		return []*cobra.Command{freeze, unfreeze, list}
	})
	return cmd
}

func printIdentityState(w io.Writer, st *api.IdentityState) {
	if !st.Frozen {
		fmt.Fprintf(w, "%s is not frozen\n", st.Identity)
		return
	}
	fmt.Fprintf(w, "%s is frozen by %s; %d leases ended\n", st.Identity, st.Freeze.By, st.LeasesEnded)
}
