package api

// Me is GET /me: who the server takes the caller for, and what it may do.
type Me struct {
	Identity    string   `json:"identity"`
	Kind        string   `json:"kind"`
	Issuer      string   `json:"issuer,omitempty"`
	Groups      []string `json:"groups,omitempty"`
	Rules       []string `json:"rules"`
	Permissions []string `json:"permissions"`
	Grants      []Grant  `json:"grants"`
	// AccessToken is the OAuth proxy's session token, handed back so that
	// a browser session can call the API with it as a bearer (DDR-27).
	AccessToken string `json:"access_token,omitempty"`
}

// Grant is permissions one rule of the server's gave the caller, over
// some projects (none: every project).
type Grant struct {
	Rule        string   `json:"rule"`
	Permissions []string `json:"permissions"`
	Projects    []string `json:"projects,omitempty"`
}
