// Command oapi-client drives a running workqueue through a client that
// oapi-codegen generated from httpapi/openapi.json, by its typed methods
// only: submit a change, list items, get the item. scripts/interop builds
// it in a scratch module beside the generated package wqclient (this
// directory begins with _, so the repository's own builds skip it).
//
//	oapi-client BASE_URL TOKEN
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"interop/client/wqclient"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: oapi-client BASE_URL TOKEN")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "oapi-client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, base, token string) error {
	c, err := wqclient.NewClientWithResponses(base, wqclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	if err != nil {
		return err
	}
	content := "generated clients submit too\n"
	var body wqclient.SubmitItemJSONRequestBody
	if err := body.FromSubmission(wqclient.Submission{
		ItemType: "mr", Forge: "gitea", Project: "team/app", SourceBranch: "workqueue/oapi-client", TargetBranch: "main",
		Title:       "A change from a generated client",
		FileActions: []wqclient.FileAction{{Action: "create", FilePath: "generated.txt", Content: &content}},
	}); err != nil {
		return err
	}
	submitted, err := c.SubmitItemWithResponse(ctx, body)
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if submitted.JSON201 == nil {
		return fmt.Errorf("submit: %d %s, want 201", submitted.StatusCode(), submitted.Body)
	}
	id := submitted.JSON201.Id.String()

	limit := 10
	listed, err := c.ListItemsWithResponse(ctx, &wqclient.ListItemsParams{Limit: &limit})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if listed.JSON200 == nil {
		return fmt.Errorf("list: %d %s", listed.StatusCode(), listed.Body)
	}
	found := false
	for _, it := range listed.JSON200.Items {
		found = found || it.Id.String() == id
	}
	if !found {
		return fmt.Errorf("list: item %s is not among %d items", id, len(listed.JSON200.Items))
	}

	got, err := c.GetItemWithResponse(ctx, id)
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if got.JSON200 == nil || got.JSON200.Id.String() != id {
		return fmt.Errorf("get %s: %d %s", id, got.StatusCode(), got.Body)
	}
	fmt.Printf("oapi-codegen client: submitted %s (%s), listed it, got it (phase %s)\n", id, submitted.JSON201.Result, got.JSON200.Phase)
	return nil
}
