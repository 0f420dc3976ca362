package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// exampleHostWarnings names every setting whose value points at a host
// reserved for examples (RFC 2606: example.com, .org, .net and their
// subdomains, and the .example top-level domain), such as a placeholder
// copied from workqueue.example.yaml: the service would call it and fail
// at the first request, not at start (issue 55).
func exampleHostWarnings(doc *yaml.Node) Problems {
	var out Problems
	var walk func(n *yaml.Node, field string)
	walk = func(n *yaml.Node, field string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, field)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], join(field, n.Content[i].Value))
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				key := strconv.Itoa(i)
				if c.Kind == yaml.MappingNode && mappingValue(c, "name") != "" {
					key = mappingValue(c, "name") // forges[gitea], as other problems name it
				}
				walk(c, field+"["+key+"]")
			}
		case yaml.ScalarNode:
			if host := exampleHost(n.Value); host != "" {
				out = append(out, &Problem{Field: field, Line: n.Line, Warning: true,
					Message: fmt.Sprintf("%s is a placeholder host reserved for examples: put your own, or remove the setting", host)})
			}
		}
	}
	walk(doc, "")
	return out
}

// exampleHost is the host a value names (a URL, or host[:port]) when it
// is one reserved for examples, else "".
func exampleHost(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v, " \t\n") {
		return ""
	}
	host := v
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil {
			return ""
		}
		host = u.Hostname()
	} else {
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			host = host[:i]
		}
		if i := strings.LastIndex(host, "@"); i >= 0 {
			host = host[i+1:]
		}
		if h, _, ok := strings.Cut(host, ":"); ok {
			host = h
		}
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, d := range []string{"example.com", "example.org", "example.net"} {
		if host == d || strings.HasSuffix(host, "."+d) {
			return host
		}
	}
	if strings.HasSuffix(host, ".example") {
		return host
	}
	return ""
}
