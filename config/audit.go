package config

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/workqueue-dev/workqueue/audit"
)

// Audit configures where audit entries go (DDR-17, DDR-28): always the
// log by default, and an archive of gzipped JSON-lines objects in an
// S3-compatible bucket or a local directory, batched by size and time.
type Audit struct {
	// Sinks are the destinations, each kind at most once; default: the log.
	Sinks []AuditSink `yaml:"sinks"`
	// Instance names this process in archive object keys (default: the
	// host name); a random id per start is added to it.
	Instance string `yaml:"instance,omitempty"`
	// BatchBytes seals an archive batch once its uncompressed JSON lines
	// reach this size.
	BatchBytes int `yaml:"batch_bytes"`
	// BatchInterval seals a non-empty batch at least this often; a
	// failed write is retried as often.
	BatchInterval Duration `yaml:"batch_interval"`
	// BufferEntries and BufferBytes bound what an archive holds while its
	// store is unreachable; entries past them are dropped, counted and
	// logged.
	BufferEntries int `yaml:"buffer_entries"`
	BufferBytes   int `yaml:"buffer_bytes"`
	// HistoryRetention keeps items' audit entries in the database this
	// long, for the item pages of every instance, across restarts; 0
	// keeps none there, and a page shows what its instance saw since it
	// started. The archive is the record either way.
	HistoryRetention Duration `yaml:"history_retention"`
}

// DefaultHistoryRetention is audit.history_retention's default.
const DefaultHistoryRetention = 30 * 24 * time.Hour

// Audit sink kinds.
const (
	AuditLog = "log" // one structured log record per entry
	AuditDir = "dir" // an archive in a local directory
	AuditS3  = "s3"  // an archive in an S3-compatible bucket
)

// AuditSink is one destination of audit entries.
type AuditSink struct {
	Kind string `yaml:"kind"`
	// Path is the dir sink's directory (relative: to the working
	// directory).
	Path string `yaml:"path,omitempty"`
	// Prefix starts every object key of a dir or s3 sink ("" for none).
	Prefix string `yaml:"prefix,omitempty"`
	// Endpoint is the s3 sink's server, host[:port] without a scheme.
	Endpoint string `yaml:"endpoint,omitempty"`
	Bucket   string `yaml:"bucket,omitempty"`
	// Region is the bucket's region; empty: the server is asked.
	Region string `yaml:"region,omitempty"`
	// The s3 credentials: each from an environment variable or a file,
	// never inline.
	AccessKeyEnv  string `yaml:"access_key_env,omitempty"`
	AccessKeyFile string `yaml:"access_key_file,omitempty"`
	SecretKeyEnv  string `yaml:"secret_key_env,omitempty"`
	SecretKeyFile string `yaml:"secret_key_file,omitempty"`
	// Insecure speaks plain HTTP to the endpoint instead of HTTPS: for a
	// server on loopback only.
	Insecure bool `yaml:"insecure,omitempty"`
}

func defaultAudit() Audit {
	return Audit{
		Sinks:         []AuditSink{{Kind: AuditLog}},
		BatchBytes:    audit.DefaultBatchBytes,
		BatchInterval: Duration(audit.DefaultBatchInterval),
		BufferEntries: audit.DefaultBufferEntries,
		BufferBytes:   audit.DefaultBufferBytes,

		HistoryRetention: Duration(DefaultHistoryRetention),
	}
}

var (
	auditInstance = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	// An S3 bucket name (the rules common to every S3-compatible server).
	bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	keyPrefix  = regexp.MustCompile(`^[A-Za-z0-9!_.*'()-]+(/[A-Za-z0-9!_.*'()-]+)*$`)
)

func (a Audit) validate(bad func(field, format string, args ...any)) {
	if len(a.Sinks) == 0 {
		bad("audit.sinks", "want at least one sink; the default is [{kind: log}]")
	}
	seen := map[string]int{}
	for i, s := range a.Sinks {
		s.validate(fmt.Sprintf("audit.sinks[%d]", i), bad)
		if j, dup := seen[s.Kind]; dup && s.Kind != "" {
			bad(fmt.Sprintf("audit.sinks[%d].kind", i), "%q is configured twice (also audit.sinks[%d])", s.Kind, j)
		}
		seen[s.Kind] = i
	}
	if a.Instance != "" && !auditInstance.MatchString(a.Instance) {
		bad("audit.instance", "want up to 64 letters, digits, '.', '_' or '-', got %q", a.Instance)
	}
	if a.BatchBytes < 1<<10 || a.BatchBytes > 64<<20 {
		bad("audit.batch_bytes", "must be between 1024 and 67108864 (64 MiB), got %d", a.BatchBytes)
	}
	if a.HistoryRetention < 0 {
		bad("audit.history_retention", "must not be negative, got %s", time.Duration(a.HistoryRetention))
	}
	if a.BatchInterval < Duration(time.Second) || a.BatchInterval > Duration(time.Hour) {
		bad("audit.batch_interval", "must be between 1s and 1h, got %s", time.Duration(a.BatchInterval))
	}
	if a.BufferEntries < 1 {
		bad("audit.buffer_entries", "must be at least 1, got %d", a.BufferEntries)
	}
	if a.BufferBytes < a.BatchBytes {
		bad("audit.buffer_bytes", "must be at least audit.batch_bytes (%d), got %d", a.BatchBytes, a.BufferBytes)
	}
}

func (s AuditSink) validate(field string, bad func(field, format string, args ...any)) {
	// Fields another kind owns are errors, not silently ignored.
	owned := map[string][]string{
		AuditLog: nil,
		AuditDir: {"path", "prefix"},
		AuditS3:  {"prefix", "endpoint", "bucket", "region", "access_key_env", "access_key_file", "secret_key_env", "secret_key_file", "insecure"},
	}
	allowed, ok := owned[s.Kind]
	if !ok {
		bad(field+".kind", "want log, dir or s3, got %q", s.Kind)
		return
	}
	for name, set := range map[string]bool{"path": s.Path != "", "prefix": s.Prefix != "", "endpoint": s.Endpoint != "",
		"bucket": s.Bucket != "", "region": s.Region != "", "access_key_env": s.AccessKeyEnv != "", "access_key_file": s.AccessKeyFile != "",
		"secret_key_env": s.SecretKeyEnv != "", "secret_key_file": s.SecretKeyFile != "", "insecure": s.Insecure} {
		if set && !slices.Contains(allowed, name) {
			bad(field+"."+name, "not a setting of a %s sink", s.Kind)
		}
	}
	if s.Prefix != "" && (!keyPrefix.MatchString(s.Prefix) || strings.Contains("/"+s.Prefix+"/", "/../") || strings.Contains("/"+s.Prefix+"/", "/./")) {
		bad(field+".prefix", "want path segments of letters, digits and !_.*'()- joined by '/', without leading or trailing '/', got %q", s.Prefix)
	}
	switch s.Kind {
	case AuditDir:
		if strings.TrimSpace(s.Path) == "" {
			bad(field+".path", "want the archive's directory")
		}
	case AuditS3:
		if host, _, err := net.SplitHostPort(s.Endpoint); s.Endpoint == "" || strings.Contains(s.Endpoint, "/") ||
			(err != nil && strings.Contains(s.Endpoint, ":")) || (err == nil && host == "") {
			bad(field+".endpoint", "want host[:port] without a scheme (insecure: true for plain HTTP), got %q", s.Endpoint)
		}
		if !bucketName.MatchString(s.Bucket) || strings.Contains(s.Bucket, "..") {
			bad(field+".bucket", "want an S3 bucket name (3-63 lowercase letters, digits, '.' and '-'), got %q", s.Bucket)
		}
		if (s.AccessKeyEnv == "") == (s.AccessKeyFile == "") {
			bad(field, "set exactly one of access_key_env and access_key_file")
		}
		if (s.SecretKeyEnv == "") == (s.SecretKeyFile == "") {
			bad(field, "set exactly one of secret_key_env and secret_key_file")
		}
	}
}

// Credentials reads an s3 sink's access and secret key; field names the
// sink in errors ("audit.sinks[2]").
func (s AuditSink) Credentials(field string) (accessKey, secretKey string, err error) {
	if accessKey, err = secret(s.AccessKeyEnv, s.AccessKeyFile, field+".access_key"); err != nil {
		return "", "", err
	}
	if secretKey, err = secret(s.SecretKeyEnv, s.SecretKeyFile, field+".secret_key"); err != nil {
		return "", "", err
	}
	return accessKey, secretKey, nil
}

// AuditInstance is the instance that names archive objects: audit.instance,
// or the host name.
func (c Config) AuditInstance() string {
	if c.Audit.Instance != "" {
		return c.Audit.Instance
	}
	host, err := os.Hostname()
	if err != nil || !auditInstance.MatchString(host) {
		return "workqueue"
	}
	return host
}
