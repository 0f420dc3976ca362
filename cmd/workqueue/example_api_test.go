package main

import (
	"context"
	"errors"
	"net/url"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/example"
)

// The example type goes through the same API as mr, with no line about it
// in service, httpapi, store or the root package (see the generic-layers
// check in scripts/check): submitted, listed, viewed, processed.
func TestTheExampleTypeIsSubmittableListableAndViewableOverTheAPI(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) { c.HandledTypes = append(c.HandledTypes, example.Name) })
	ctx := context.Background()
	submitter, _ := client.New(w.base, w.tokens["submit"])
	reader, _ := client.New(w.base, w.tokens["read"])

	got, err := submitter.Submit(ctx, []byte(`{"item_type":"example","steps":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Result != wq.SubmitCreated || got.ItemType != example.Name || got.Project != "" {
		t.Fatalf("submitted: %+v", got)
	}
	page, _, err := reader.List(ctx, url.Values{"item_type": {example.Name}})
	if err != nil || len(page) != 1 || page[0].ID != got.ID {
		t.Fatalf("listed: %+v, %v", page, err)
	}
	done := w.waitItem(got.ID, "completed", func(it map[string]any) bool { return it["phase"] == "completed" })
	detail, _ := done["detail"].(map[string]any)
	if detail["steps"] != 3.0 || detail["done"] != 3.0 {
		t.Errorf("viewed detail %v, want 3 of 3 steps done", detail)
	}

	_, err = submitter.Submit(ctx, []byte(`{"item_type":"example","steps":3,"extra":1}`))
	if wq.ErrorCode(err) != wq.EINVALID {
		t.Errorf("an unknown member: %v, want invalid", err)
	}
}

func TestAProductionServeTakesNoExampleItems(t *testing.T) {
	w := startAPI(t, "", nil) // handled_types: [mr], example not enabled
	c, _ := client.New(w.base, w.tokens["submit"])
	_, err := c.Submit(context.Background(), []byte(`{"item_type":"example","steps":1}`))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 422 || wq.ErrorCode(err) != wq.EINVALID || ce.Problem.Detail != `item_type: want one of mr, got "example"` {
		t.Fatalf("submit of an example item: %v, want 422 naming item_type", err)
	}
}
