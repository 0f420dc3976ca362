package config

import (
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SecretRef names where one secret comes from, never its value.
type SecretRef struct {
	Field    string // e.g. forges[gitea].token
	Env      string // the environment variable, or ""
	File     string // the file, or ""
	Required bool
}

// Secrets lists every secret the configuration refers to.
func (c Config) Secrets() []SecretRef {
	var out []SecretRef
	add := func(field, env, file string, required bool) {
		if env != "" || file != "" || required {
			out = append(out, SecretRef{Field: field, Env: env, File: file, Required: required})
		}
	}
	for _, f := range c.Forges {
		field := "forges[" + f.Name + "]"
		add(field+".token", f.TokenEnv, f.TokenFile, true)
		add(field+".webhook_secret", f.WebhookSecretEnv, f.WebhookSecretFile, false)
		add(field+".review_token", f.ReviewTokenEnv, f.ReviewTokenFile, false)
	}
	add("incidents.sentry.secret", c.Incidents.Sentry.SecretEnv, c.Incidents.Sentry.SecretFile, false)
	add("incidents.glitchtip.secret", c.Incidents.GlitchTip.SecretEnv, c.Incidents.GlitchTip.SecretFile, false)
	for i, s := range c.Audit.Sinks {
		if s.Kind == AuditS3 {
			field := fmt.Sprintf("audit.sinks[%d]", i)
			add(field+".access_key", s.AccessKeyEnv, s.AccessKeyFile, true)
			add(field+".secret_key", s.SecretKeyEnv, s.SecretKeyFile, true)
		}
	}
	return out
}

// Status says whether the secret can be read, without reading it out:
// "env X: set", "file F: readable", or what is wrong, with ok false.
func (r SecretRef) Status() (status string, ok bool) {
	switch {
	case r.Env != "" && r.File != "":
		return fmt.Sprintf("both env %s and file %s are set; set one", r.Env, r.File), false
	case r.Env != "":
		if os.Getenv(r.Env) == "" {
			return fmt.Sprintf("env %s: empty or unset", r.Env), false
		}
		return fmt.Sprintf("env %s: set", r.Env), true
	case r.File != "":
		if _, err := secret("", r.File, r.Field); err != nil {
			return fmt.Sprintf("file %s: unreadable or empty", r.File), false
		}
		return fmt.Sprintf("file %s: readable", r.File), true
	}
	return "not configured", !r.Required
}

// Check reads the configuration file at path like Load and returns what
// it resolved (the defaults filled in) and every problem at once: the
// decoding's or else the validation's, and each secret that cannot be
// read. The configuration is the zero Config when the file does not
// decode.
func Check(path string) (Config, []error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, []error{err}
	}
	defer f.Close()
	cfg, err := decode(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return Config{}, []error{err}
	}
	var problems []error
	if err := cfg.Validate(); err != nil {
		problems = append(problems, unjoin(err)...)
	}
	for _, r := range cfg.Secrets() {
		if status, ok := r.Status(); !ok {
			problems = append(problems, fmt.Errorf("%s: %s", r.Field, status))
		}
	}
	return cfg, problems
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// PrintResolved writes the configuration as YAML, every URL's password
// redacted (the file holds no other secret values: they come from
// environment variables and files, which it names).
func (c Config) PrintResolved(w io.Writer) error {
	c.Database = RedactURL(c.Database)
	c.PublicURL = RedactURL(c.PublicURL)
	c.Auth.Introspection.URL = RedactURL(c.Auth.Introspection.URL)
	c.Forges = append([]Forge(nil), c.Forges...)
	for i := range c.Forges {
		c.Forges[i].URL = RedactURL(c.Forges[i].URL)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// FormatProblems writes problems one a line, indented.
func FormatProblems(w io.Writer, problems []error) {
	for _, p := range problems {
		for i, line := range strings.Split(p.Error(), "\n") {
			if i == 0 {
				fmt.Fprintf(w, "  - %s\n", line)
			} else {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
}
