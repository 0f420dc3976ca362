package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/service"
)

func TestAShortItemIDIsAUniquePrefixOfAnItemTheCallerMayRead(t *testing.T) {
	ctx := context.Background()
	store := testdb.Open(t, "sqlite").Queue
	items := &service.Items{Store: store, Clock: clockwork.NewFakeClockAt(time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC))}
	items.Register(example.Type(example.Options{}), example.API(store))
	admin := &auth.Caller{Identity: "token:ops", Grants: []auth.Grant{{Rule: "ops", Permissions: []auth.Permission{auth.Admin}}}}
	var ids []string
	for range 3 {
		got, _, err := items.Submit(ctx, admin, []byte(`{"item_type":"example","steps":1}`))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got.ID)
	}
	// The ids differ somewhere after their shared time prefix: the
	// shortest prefix of ids[1] that no other id has.
	unique := ""
	for n := service.MinIDPrefix; n <= len(ids[1]); n++ {
		p := ids[1][:n]
		if !strings.HasPrefix(ids[0], p) && !strings.HasPrefix(ids[2], p) && !strings.HasSuffix(p, "-") {
			unique = p
			break
		}
	}
	shared := ids[0][:service.MinIDPrefix] // all three were made in the same second
	for _, tc := range []struct {
		name, text string
		want       string
		code       string
	}{
		{"the full id", ids[1], ids[1], ""},
		{"a unique prefix", unique, ids[1], ""},
		{"a unique prefix in upper case without hyphens", strings.ToUpper(strings.ReplaceAll(unique, "-", "")), ids[1], ""},
		{"a prefix several items share", shared, "", wq.ECONFLICT},
		{"a prefix no item has", "ffff", "", wq.ENOTFOUND},
		{"too short a prefix", ids[1][:3], "", wq.EINVALID},
		{"not hex", "zzzzzz", "", wq.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := items.ResolveID(ctx, admin, "id", tc.text)
			if tc.code != "" {
				if wq.ErrorCode(err) != tc.code {
					t.Errorf("ResolveID(%q) = %v, %v; want %s", tc.text, got, err, tc.code)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Errorf("ResolveID(%q) = %v, %v; want %s", tc.text, got, err, tc.want)
			}
		})
	}
	stranger := &auth.Caller{Identity: "token:other", Grants: []auth.Grant{{Rule: "other", Permissions: []auth.Permission{auth.Read}, Projects: []string{"elsewhere/**"}}}}
	if _, err := items.ResolveID(ctx, stranger, "id", unique); wq.ErrorCode(err) != wq.ENOTFOUND {
		t.Errorf("a caller who may not read the item resolves its prefix: %v, want not found", err)
	}
}
