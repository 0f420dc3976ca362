// Package identity bounds what one identity (an authenticated caller, the
// unit of trust of DESIGN section 9) may write, and lets an admin stop it
// altogether (DESIGN section 2, "Honest work first"; issue 49 point 5).
//
// A Guard keeps two write budgets per identity and hour window
// (submissions and gated forge actions), counted in the database so that
// they hold across every instance sharing it, and the freezes admins set.
// A frozen identity's calls are refused (ReasonFrozen), its control-plane
// leases are ended when it is frozen (Guard.OnFreeze), and the engine
// holds its items before any forge write (Guard.Hold) until it is
// unfrozen; every freeze and unfreeze is audited with the old and new
// state.
//
// The package names no driver: identity/idstore is its Store on the
// drivers' seam, with its own migration chain.
package identity
