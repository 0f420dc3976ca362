// Package suggest finds the name a person probably meant when they typed
// one that does not exist: config check's unknown keys and a
// submission's unknown members say "did you mean …?" with it.
package suggest

// Nearest is the name of names closest to typed by edit distance, when
// it is close enough to be a likely typo, else "". Of names equally
// close, the first in lexical order.
func Nearest(typed string, names []string) string {
	best, bestDist := "", 0
	for _, name := range names {
		d := Distance(typed, name)
		if best == "" || d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	if best == "" || bestDist > max(2, len(typed)/3) {
		return ""
	}
	return best
}

// Distance is the Levenshtein distance of a and b, with a swap of two
// neighbouring letters counting one (the common typo).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
