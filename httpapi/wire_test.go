package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/workqueue-dev/workqueue/api"
	cp "github.com/workqueue-dev/workqueue/controlplane"
)

// filled is a T whose every field, at every level, holds a value of its
// own, so that a field a mapping forgets shows in its JSON.
func filled[T any](t *testing.T) *T {
	t.Helper()
	v := new(T)
	n := 0
	fill(t, reflect.ValueOf(v).Elem(), &n)
	return v
}

func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, *n, time.UTC)))
		return
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(fmt.Sprintf(`{"n":%d}`, *n)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprint("s", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(t, v.Index(0), n)
		fill(t, v.Index(1), n)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), n)
			}
		}
	default:
		t.Fatalf("fill: no value for a %v", v.Type())
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWireTypesAnswerWhatTheDomainTypesDid holds every mapping from a
// domain value to its wire type to the JSON the domain value encoded to
// when it was the answer itself: byte for byte, every field set. (The
// control plane's values need none: the domain and the wire share them,
// packages cptype and incidenttype.)
func TestWireTypesAnswerWhatTheDomainTypesDid(t *testing.T) {
	t.Parallel()
	for name, pair := range map[string]func(t *testing.T) (any, any){
		"an observation, read": func(t *testing.T) (any, any) {
			w := filled[api.Observation](t)
			return w, observation(w)
		},
		"an abandon proof, read": func(t *testing.T) (any, any) {
			w := filled[api.AbandonProof](t)
			return w, abandonProof(w)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, got := pair(t)
			if diff := cmp.Diff(jsonOf(t, want), jsonOf(t, got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestWireListsKeepNullAndEmptyApart: a list the domain left nil is
// answered null, an empty one [], as before the wire types.
func TestWireListsKeepNullAndEmptyApart(t *testing.T) {
	t.Parallel()
	if got := jsonOf(t, api.LeaseList{Leases: []cp.Lease(nil)}); got != `{"leases":null}` {
		t.Errorf("no leases: %s, want null", got)
	}
	if got := jsonOf(t, api.LeaseList{Leases: []cp.Lease{}}); got != `{"leases":[]}` {
		t.Errorf("an empty list of leases: %s, want []", got)
	}
	if got := jsonOf(t, &cp.Allocation{Outcome: cp.OutcomeNoSafeWork}); got != `{"outcome":"no_safe_work","candidates":null}` {
		t.Errorf("an allocation without candidates: %s", got)
	}
}
