package deploy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/testapi"
)

// manifests is every object of deploy/kubernetes, decoded into the
// Kubernetes API types.
type manifests struct {
	namespaces      []*corev1.Namespace
	serviceAccounts []*corev1.ServiceAccount
	bindings        []*rbacv1.ClusterRoleBinding
	configMaps      []*corev1.ConfigMap
	claims          []*corev1.PersistentVolumeClaim
	services        []*corev1.Service
	deployments     []*appsv1.Deployment
}

// decodeManifest decodes one YAML document into the type its apiVersion
// and kind name, refusing unknown and duplicate fields (a misspelt or
// misplaced key is an error, not a silently ignored line) and kinds this
// set does not expect.
func (m *manifests) decodeManifest(doc []byte) error {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "v1 Namespace":
		o := &corev1.Namespace{}
		m.namespaces, obj = append(m.namespaces, o), o
	case "v1 ServiceAccount":
		o := &corev1.ServiceAccount{}
		m.serviceAccounts, obj = append(m.serviceAccounts, o), o
	case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
		o := &rbacv1.ClusterRoleBinding{}
		m.bindings, obj = append(m.bindings, o), o
	case "v1 ConfigMap":
		o := &corev1.ConfigMap{}
		m.configMaps, obj = append(m.configMaps, o), o
	case "v1 PersistentVolumeClaim":
		o := &corev1.PersistentVolumeClaim{}
		m.claims, obj = append(m.claims, o), o
	case "v1 Service":
		o := &corev1.Service{}
		m.services, obj = append(m.services, o), o
	case "apps/v1 Deployment":
		o := &appsv1.Deployment{}
		m.deployments, obj = append(m.deployments, o), o
	default:
		return fmt.Errorf("apiVersion %q kind %q: not a kind this manifest set expects", meta.APIVersion, meta.Kind)
	}
	return yaml.UnmarshalStrict(doc, obj)
}

// splitDocuments splits a YAML stream at its "---" lines, dropping
// documents that hold only comments.
func splitDocuments(body []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		for _, line := range strings.Split(cur.String(), "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, bytes.Clone(cur.Bytes()))
				break
			}
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(string(body), "\n") {
		if strings.TrimRight(line, " \r\n") == "---" {
			flush()
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return docs
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under kubernetes/ (%v)", err)
	}
	m := &manifests{}
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(body) {
			if err := m.decodeManifest(doc); err != nil {
				t.Errorf("%s, document %d: %v", file, i+1, err)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if len(m.deployments) != 1 || len(m.configMaps) != 1 {
		t.Fatalf("want one Deployment and one ConfigMap, got %d and %d", len(m.deployments), len(m.configMaps))
	}
	return m
}

// TestStrictDecodingRefusesUnknownFields shows that the decoding the
// other tests rely on would catch a misspelt key.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"a misspelt field":     "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 1\n",
		"a misplaced field":    "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nselector: {a: b}\n",
		"a duplicated field":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {}\ndata: {}\n",
		"a kind not expected":  "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		"a wrong field's type": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: one\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := (&manifests{}).decodeManifest([]byte(doc)); err == nil {
				t.Errorf("decoded without an error:\n%s", doc)
			}
		})
	}
}

// serviceConfig is the configuration the ConfigMap carries, validated by
// the service's own parser, with the path the Deployment passes to serve.
func serviceConfig(t *testing.T, m *manifests) (config.Config, string) {
	t.Helper()
	cm := m.configMaps[0]
	if len(cm.Data) != 1 {
		t.Fatalf("ConfigMap %s: want one key, the config file, got %d", cm.Name, len(cm.Data))
	}
	for key, body := range cm.Data {
		cfg, err := config.Parse(strings.NewReader(body), testapi.Known())
		if err != nil {
			t.Fatalf("ConfigMap %s, key %s: the service refuses its config:\n%v", cm.Name, key, err)
		}
		return cfg, key
	}
	panic("unreachable")
}

func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	cfg, configKey := serviceConfig(t, m)
	dep := m.deployments[0]
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment %s: want one container, got %d", dep.Name, len(pod.Containers))
	}
	c := pod.Containers[0]

	t.Run("every namespaced object is in the one namespace", func(t *testing.T) {
		if len(m.namespaces) != 1 {
			t.Fatalf("want one Namespace, got %d", len(m.namespaces))
		}
		ns := m.namespaces[0].Name
		check := func(kind, name, got string) {
			if got != ns {
				t.Errorf("%s %s: namespace %q, want %q", kind, name, got, ns)
			}
		}
		for _, o := range m.serviceAccounts {
			check("ServiceAccount", o.Name, o.Namespace)
		}
		for _, o := range m.configMaps {
			check("ConfigMap", o.Name, o.Namespace)
		}
		for _, o := range m.claims {
			check("PersistentVolumeClaim", o.Name, o.Namespace)
		}
		for _, o := range m.services {
			check("Service", o.Name, o.Namespace)
		}
		check("Deployment", dep.Name, dep.Namespace)
		for _, b := range m.bindings {
			for _, s := range b.Subjects {
				if s.Kind == rbacv1.ServiceAccountKind {
					check("ClusterRoleBinding "+b.Name+" subject", s.Name, s.Namespace)
				}
			}
		}
	})

	t.Run("the probes ask readyz and healthz on the serving port", func(t *testing.T) {
		port := containerPort(t, c, cfg.Listen)
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{{"readinessProbe", c.ReadinessProbe, "/readyz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s: want an httpGet probe, got %+v", p.name, p.probe)
				continue
			}
			g := p.probe.HTTPGet
			if g.Path != p.path {
				t.Errorf("%s: path %q, want %q", p.name, g.Path, p.path)
			}
			if g.Port.String() != port.Name && g.Port.IntValue() != int(port.ContainerPort) {
				t.Errorf("%s: port %s, want the serving port %s (%d)", p.name, g.Port.String(), port.Name, port.ContainerPort)
			}
		}
	})

	t.Run("a preStop delay, and time after it for shutdown_grace", func(t *testing.T) {
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
			t.Fatal("want lifecycle.preStop.sleep (the image has no shell for an exec sleep)")
		}
		sleep := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		if sleep <= 0 {
			t.Errorf("preStop sleeps %s, want a delay", sleep)
		}
		if pod.TerminationGracePeriodSeconds == nil {
			t.Fatal("want terminationGracePeriodSeconds set")
		}
		grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
		if need := sleep + time.Duration(cfg.Processing.ShutdownGrace); grace <= need {
			t.Errorf("terminationGracePeriodSeconds %s, want more than preStop %s + processing.shutdown_grace %s",
				grace, sleep, time.Duration(cfg.Processing.ShutdownGrace))
		}
	})

	t.Run("non-root with a read-only root filesystem", func(t *testing.T) {
		psc, sc := pod.SecurityContext, c.SecurityContext
		if psc == nil || sc == nil {
			t.Fatal("want a pod and a container securityContext")
		}
		if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Error("pod: want runAsNonRoot: true")
		}
		// runAsNonRoot is enforced only with a numeric user to check.
		if psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Error("pod: want runAsUser set to a user other than root")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Error("container: want readOnlyRootFilesystem: true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Error("container: want allowPrivilegeEscalation: false")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Error("container: want capabilities.drop [ALL]")
		}
		if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Error("pod: want seccompProfile RuntimeDefault")
		}
	})

	t.Run("requests and a memory limit", func(t *testing.T) {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
				t.Errorf("want a %s request", r)
			}
		}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.IsZero() {
			t.Error("want a memory limit")
		}
	})

	t.Run("serve reads the ConfigMap's config from its mount", func(t *testing.T) {
		i := slices.Index(c.Args, "--config")
		if i < 0 || i+1 >= len(c.Args) || !slices.Contains(c.Args, "serve") {
			t.Fatalf("args %q: want serve --config FILE", c.Args)
		}
		file := c.Args[i+1]
		vol := volumeAt(t, pod, c, filepath.Dir(file))
		if vol.ConfigMap == nil || vol.ConfigMap.Name != m.configMaps[0].Name {
			t.Errorf("%s is not mounted from ConfigMap %s", filepath.Dir(file), m.configMaps[0].Name)
		}
		if filepath.Base(file) != configKey {
			t.Errorf("serve reads %s, but the ConfigMap's key is %s", file, configKey)
		}
	})

	t.Run("the SQLite database lies on the claim, and one pod writes it", func(t *testing.T) {
		path, ok := strings.CutPrefix(cfg.Database, "sqlite://")
		if !ok {
			t.Skipf("database %s is not SQLite", config.RedactURL(cfg.Database))
		}
		vol := volumeAt(t, pod, c, filepath.Dir(path))
		if vol.PersistentVolumeClaim == nil {
			t.Fatalf("%s is not on a PersistentVolumeClaim", path)
		}
		if !slices.ContainsFunc(m.claims, func(p *corev1.PersistentVolumeClaim) bool { return p.Name == vol.PersistentVolumeClaim.ClaimName }) {
			t.Errorf("claim %s is not in the manifests", vol.PersistentVolumeClaim.ClaimName)
		}
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Error("SQLite has one writer: want replicas 1 and the Recreate strategy")
		}
	})

	t.Run("every secret the config names comes from a Secret", func(t *testing.T) {
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		secrets := cfg.Secrets()
		if len(secrets) == 0 {
			t.Fatal("the config names no secret: nothing for the Secret reference to carry")
		}
		for _, s := range secrets {
			if s.Env == "" {
				t.Errorf("%s: want it from an environment variable set from a Secret", s.Field)
				continue
			}
			e, ok := env[s.Env]
			if !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s: env %s is not set from a secretKeyRef", s.Field, s.Env)
				continue
			}
			if e.ValueFrom.SecretKeyRef.Optional != nil && *e.ValueFrom.SecretKeyRef.Optional && s.Required {
				t.Errorf("%s: env %s is required but its secretKeyRef is optional", s.Field, s.Env)
			}
		}
	})

	t.Run("a service account the k8s issuer can use", func(t *testing.T) {
		if !slices.ContainsFunc(cfg.Auth.Rules, func(r config.Rule) bool { return r.Issuer == "k8s" }) {
			t.Error("the config has no rule with issuer k8s")
		}
		i := slices.IndexFunc(m.serviceAccounts, func(sa *corev1.ServiceAccount) bool { return sa.Name == pod.ServiceAccountName })
		if pod.ServiceAccountName == "" || i < 0 {
			t.Fatalf("serviceAccountName %q: want one of the manifests' ServiceAccounts", pod.ServiceAccountName)
		}
		// The service reads its own token to discover the cluster's issuer.
		sa := m.serviceAccounts[i]
		if (sa.AutomountServiceAccountToken != nil && !*sa.AutomountServiceAccountToken) ||
			(pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken) {
			t.Error("the service account token is not mounted: the k8s issuer cannot be discovered")
		}
		bound := slices.ContainsFunc(m.bindings, func(b *rbacv1.ClusterRoleBinding) bool {
			return b.RoleRef.Name == "system:service-account-issuer-discovery" && slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
				return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa.Name
			})
		})
		if !bound {
			t.Errorf("ServiceAccount %s is not bound to system:service-account-issuer-discovery", sa.Name)
		}
	})

	t.Run("the Service selects the pods and targets the serving port", func(t *testing.T) {
		if len(m.services) != 1 {
			t.Fatalf("want one Service, got %d", len(m.services))
		}
		svc := m.services[0]
		for k, v := range svc.Spec.Selector {
			if dep.Spec.Template.Labels[k] != v {
				t.Errorf("selector %s=%s does not select the Deployment's pods", k, v)
			}
		}
		if len(svc.Spec.Selector) == 0 {
			t.Error("the Service selects nothing")
		}
		port := containerPort(t, c, cfg.Listen)
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.String() != port.Name && p.TargetPort.IntValue() != int(port.ContainerPort) {
				t.Errorf("Service port %s targets %s, want %s", p.Name, p.TargetPort.String(), port.Name)
			}
		}
	})

	t.Run("the image is ko's reference to the command", func(t *testing.T) {
		if want := "ko://github.com/workqueue-dev/workqueue/cmd/workqueue"; c.Image != want {
			t.Errorf("image %q, want %q", c.Image, want)
		}
	})
}

// containerPort is the container's port that the config's listen address
// serves, which must listen on every interface to be probed.
func containerPort(t *testing.T, c corev1.Container, listen string) corev1.ContainerPort {
	t.Helper()
	host, port, ok := strings.Cut(listen, ":")
	if !ok || (host != "" && host != "0.0.0.0" && host != "[::]") {
		t.Fatalf("listen %q: the kubelet and the Service cannot reach it; want all interfaces", listen)
	}
	for _, p := range c.Ports {
		if fmt.Sprint(p.ContainerPort) == port {
			return p
		}
	}
	t.Fatalf("listen %q: no container port %s", listen, port)
	return corev1.ContainerPort{}
}

// volumeAt is the volume mounted at dir in the container.
func volumeAt(t *testing.T, pod corev1.PodSpec, c corev1.Container, dir string) corev1.Volume {
	t.Helper()
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == dir {
			for _, v := range pod.Volumes {
				if v.Name == vm.Name {
					return v
				}
			}
			t.Fatalf("mount %s names volume %s, which the pod lacks", dir, vm.Name)
		}
	}
	t.Fatalf("nothing is mounted at %s", dir)
	return corev1.Volume{}
}

// TestBinaryLinksNoKubernetesTypes keeps the API types these tests use
// out of the product: they are large and the service needs none of them.
func TestBinaryLinksNoKubernetesTypes(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/workqueue-dev/workqueue/cmd/workqueue").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if !slices.Contains(pkgs, "github.com/workqueue-dev/workqueue/config") {
		t.Fatalf("go list -deps printed no workqueue package:\n%s", out)
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") {
			t.Errorf("cmd/workqueue links %s", p)
		}
	}
}

// unit is a systemd unit file: section → key → values in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, file string) unit {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	header := regexp.MustCompile(`^\[([A-Za-z]+)\]$`)
	entry := regexp.MustCompile(`^([A-Za-z][A-Za-z0-9]*)=(.*)$`)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case header.MatchString(line):
			section = header.FindStringSubmatch(line)[1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		case entry.MatchString(line) && section != "":
			kv := entry.FindStringSubmatch(line)
			u[section][kv[1]] = append(u[section][kv[1]], kv[2])
		default:
			t.Errorf("%s:%d: not a section header or a Key=value line: %q", file, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	u := parseUnit(t, "systemd/workqueue.service")
	svc := u["Service"]
	if svc == nil {
		t.Fatal("no [Service] section")
	}
	last := func(key string) string {
		if v := svc[key]; len(v) > 0 {
			return v[len(v)-1]
		}
		return ""
	}
	for key, want := range map[string]string{
		"DynamicUser":             "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"NoNewPrivileges":         "yes",
		"StateDirectory":          "workqueue",
		"CapabilityBoundingSet":   "",
		"RestrictSUIDSGID":        "yes",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectControlGroups":    "yes",
		"RestrictNamespaces":      "yes",
		"SystemCallArchitectures": "native",
		"UMask":                   "0077",
	} {
		if _, ok := svc[key]; !ok || last(key) != want {
			t.Errorf("[Service] %s=%q, want %q (set: %v)", key, last(key), want, ok)
		}
	}

	// serve reads the config the unit names, and that config keeps the
	// database in the StateDirectory, the one place the unit may write.
	fields := strings.Fields(last("ExecStart"))
	i := slices.Index(fields, "--config")
	if len(fields) < 2 || fields[1] != "serve" || i < 0 || i+1 >= len(fields) {
		t.Fatalf("ExecStart=%q: want BINARY serve --config FILE", last("ExecStart"))
	}
	want := "/etc/workqueue/workqueue.yaml"
	if fields[i+1] != want {
		t.Errorf("ExecStart reads %s, want %s (systemd/workqueue.yaml installed there)", fields[i+1], want)
	}
	body, err := os.ReadFile("systemd/workqueue.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(bytes.NewReader(body), testapi.Known())
	if err != nil {
		t.Fatalf("systemd/workqueue.yaml: the service refuses it:\n%v", err)
	}
	if path, _ := strings.CutPrefix(cfg.Database, "sqlite://"); filepath.Dir(path) != "/var/lib/workqueue" {
		t.Errorf("database %q: want SQLite under /var/lib/workqueue, the StateDirectory", cfg.Database)
	}
	// Secrets are systemd credentials, read from $CREDENTIALS_DIRECTORY.
	creds := map[string]bool{}
	for _, v := range svc["LoadCredential"] {
		name, _, _ := strings.Cut(v, ":")
		creds[name] = true
	}
	for _, s := range cfg.Secrets() {
		dir, name := filepath.Split(s.File)
		if s.File == "" || dir != "/run/credentials/workqueue.service/" || !creds[name] {
			t.Errorf("%s: want token_file /run/credentials/workqueue.service/NAME with LoadCredential=NAME:…, got env %q file %q", s.Field, s.Env, s.File)
		}
	}
	if len(creds) == 0 {
		t.Error("no LoadCredential: the forge token has nowhere to come from")
	}
}

// TestGitLabCIExample checks the GitLab CI example against the
// Kubernetes config's rule for GitLab CI jobs: the job's ID token is
// minted for the audience the rule demands, and lands in the variable the
// CLI reads. cmd/workqueue's tests check the commands it runs.
func TestGitLabCIExample(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("../examples/gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var pipeline map[string]any
	if err := yaml.UnmarshalStrict(body, &pipeline); err != nil {
		t.Fatalf("examples/gitlab-ci.yml: %v", err)
	}
	m := loadManifests(t)
	cfg, _ := serviceConfig(t, m)
	var audiences []any
	for _, r := range cfg.Auth.Rules {
		if strings.HasPrefix(r.Issuer, "https://") {
			audiences = append(audiences, r.Claims["aud"])
		}
	}
	jobs := 0
	for name, v := range pipeline {
		job, ok := v.(map[string]any)
		if !ok || job["script"] == nil {
			continue
		}
		jobs++
		tokens, _ := job["id_tokens"].(map[string]any)
		tok, _ := tokens["WORKQUEUE_TOKEN"].(map[string]any)
		if tok == nil {
			t.Errorf("job %s: want id_tokens.WORKQUEUE_TOKEN, the variable the CLI reads", name)
			continue
		}
		if !slices.Contains(audiences, tok["aud"]) {
			t.Errorf("job %s: id token audience %v, but the config's GitLab rules want one of %v", name, tok["aud"], audiences)
		}
		script := fmt.Sprint(job["script"])
		if !strings.Contains(script, "workqueue items submit") {
			t.Errorf("job %s: its script does not submit a change with workqueue items submit", name)
		}
	}
	if jobs == 0 {
		t.Error("examples/gitlab-ci.yml has no job")
	}
}

// The login sidecar's files (DDR-27) decode strictly as the patches they
// are, its configuration is valid and names the header the proxy passes
// the access token in, a rule takes the proxy's provider's tokens, and the
// proxy guards people's pages only, refreshing its cookie every hour, in
// front of serve on the pod's loopback. (cmd/workqueue's
// TestTheLoginSidecar runs these arguments with a real proxy.)
func TestLoginSidecar(t *testing.T) {
	t.Parallel()
	kustomization, err := os.ReadFile("login-sidecar/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := &manifests{}
	for _, name := range []string{"deployment.yaml", "service.yaml", "configmap.yaml"} {
		if !strings.Contains(string(kustomization), "path: "+name) {
			t.Errorf("kustomization.yaml does not patch with %s", name)
		}
		body, err := os.ReadFile("login-sidecar/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range splitDocuments(body) {
			if err := m.decodeManifest(doc); err != nil {
				t.Fatalf("login-sidecar/%s: %v", name, err)
			}
		}
	}
	cfg, _ := serviceConfig(t, m)
	if cfg.Auth.ProxyAccessTokenHeader != "X-Forwarded-Access-Token" {
		t.Errorf("auth.proxy_access_token_header = %q, want the header the proxy sets", cfg.Auth.ProxyAccessTokenHeader)
	}
	proxy := m.deployments[0].Spec.Template.Spec.Containers[0]
	args := map[string][]string{}
	for _, a := range proxy.Args {
		name, value, _ := strings.Cut(a, "=")
		args[name] = append(args[name], value)
	}
	issuer := args["--oidc-issuer-url"]
	if len(issuer) != 1 || !slices.ContainsFunc(cfg.Auth.Rules, func(r config.Rule) bool { return r.Issuer == issuer[0] }) {
		t.Errorf("no auth rule takes the tokens of the proxy's provider %v", issuer)
	}
	_, port, _ := net.SplitHostPort(cfg.Listen)
	for flag, want := range map[string]string{"--pass-access-token": "true", "--cookie-refresh": "1h", "--cookie-secure": "true",
		"--upstream": "http://127.0.0.1:" + port + "/", "--provider": "oidc"} {
		if got := args[flag]; len(got) != 1 || got[0] != want {
			t.Errorf("%s = %v, want %s", flag, got, want)
		}
	}
	for _, path := range []string{"/api/v1/items", "/webhooks/gitlab", "/mcp", "/metrics", "/healthz", "/readyz", "/.well-known/oauth-protected-resource"} {
		if !slices.ContainsFunc(args["--skip-auth-route"], func(re string) bool { return regexp.MustCompile(re).MatchString(path) }) {
			t.Errorf("the proxy guards %s, which takes bearer tokens", path)
		}
	}
	for _, path := range []string{"/me", "/ui/", "/ui/login/proxy", "/"} {
		if slices.ContainsFunc(args["--skip-auth-route"], func(re string) bool { return regexp.MustCompile(re).MatchString(path) }) {
			t.Errorf("the proxy lets %s through without a login", path)
		}
	}
	if svc := m.services[0]; svc.Spec.Ports[0].TargetPort.StrVal != proxy.Ports[0].Name {
		t.Errorf("the Service sends to %q, not to the proxy's port %q", svc.Spec.Ports[0].TargetPort.StrVal, proxy.Ports[0].Name)
	}
}
