package service

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
)

// MinIDPrefix is the fewest hex digits a short item id may have.
const MinIDPrefix = 4

// ResolveID reads an item id given in full or, like git's short commit
// ids, as a prefix of at least MinIDPrefix hex digits (hyphens as in the
// full form, or none) that starts exactly one item the caller may read
// (issue 29). EINVALID for text that is neither; ENOTFOUND when no
// item the caller may read has the prefix; ECONFLICT, naming them, when
// several do. Ids are time-ordered (UUIDv7): items made in the same
// second share their first eight digits, so a prefix that tells them
// apart is usually longer than a commit's.
func (s *Items) ResolveID(ctx context.Context, caller *auth.Caller, field, text string) (wq.ItemID, error) {
	if id, err := uuid.Parse(text); err == nil {
		return id, nil
	}
	lower := strings.ToLower(text)
	digits := strings.ReplaceAll(lower, "-", "")
	if strings.Trim(digits, "0123456789abcdef") != "" || len(digits) < MinIDPrefix || len(digits) >= 32 ||
		(lower != digits && strings.TrimSuffix(lower, "-") != formatPrefix(digits)) {
		return wq.ItemID{}, wq.Errorf(wq.EINVALID, "%s: want an item id or at least %d of its first hex digits, got %q", field, MinIDPrefix, text)
	}
	// The items starting with the prefix are those below its upper
	// bound (the prefix padded with f) and at or above its lower bound
	// (padded with 0): newest first from the bound, as a list pages.
	hi := mustID(digits + strings.Repeat("f", 32-len(digits)))
	var matches []wq.ItemID
	before, ok := successor(hi)
	f := wq.ItemFilter{Before: before, Limit: 20}
	if !ok {
		f.Before = uuid.Nil // the prefix is all f: every id is below it
	}
	items, err := s.Store.ListItems(ctx, f)
	if err != nil {
		return wq.ItemID{}, err
	}
	for _, it := range items {
		if !strings.HasPrefix(idDigits(it.ID), digits) {
			break // below the prefix's range: newest first, so none after
		}
		if mayRead(caller, it.Project) {
			matches = append(matches, it.ID)
		}
	}
	switch len(matches) {
	case 0:
		return wq.ItemID{}, wq.Errorf(wq.ENOTFOUND, "%s: no item id starts with %q", field, text)
	case 1:
		return matches[0], nil
	}
	ids := make([]string, len(matches))
	for i, id := range matches {
		ids[i] = id.String()
	}
	return wq.ItemID{}, wq.Errorf(wq.ECONFLICT, "%s: %q starts %d item ids (%s): give more digits", field, text, len(matches), strings.Join(ids, ", "))
}

// idDigits is an id's 32 hex digits, without hyphens.
func idDigits(id wq.ItemID) string { return hex.EncodeToString(id[:]) }

// formatPrefix writes hex digits with the hyphens of an id's text.
func formatPrefix(digits string) string {
	var b strings.Builder
	for i, c := range digits {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b.WriteByte('-')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func mustID(digits string) wq.ItemID {
	var id wq.ItemID
	if _, err := hex.Decode(id[:], []byte(digits)); err != nil {
		panic(fmt.Sprintf("item id digits %q: %v", digits, err))
	}
	return id
}

// successor is the id one above id, false when id is the largest.
func successor(id wq.ItemID) (wq.ItemID, bool) {
	for i := len(id) - 1; i >= 0; i-- {
		id[i]++
		if id[i] != 0 {
			return id, true
		}
	}
	return id, false
}
