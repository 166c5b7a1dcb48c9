package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/silicolab/silico/wire"
)

// The deployment files are checked statically: they parse, every image is pinned (to the Temporal versions in
// go.mod where it is Temporal's), and the flags and environment variables they give the worker are ones it
// accepts. Nothing here starts a container.

const deployDir = "../../deploy/temporal"

// yamlDocs parses every document of a YAML file.
func yamlDocs(t *testing.T, path string) []any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []any
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s does not parse: %v", path, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

func deployYAMLFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(deployDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) < 4 {
		t.Fatalf("deployment YAML files: %v, %v", files, err)
	}
	return files
}

// walk calls fn for every map in v, depth first.
func walk(v any, fn func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		fn(v)
		for _, c := range v {
			walk(c, fn)
		}
	case []any:
		for _, c := range v {
			walk(c, fn)
		}
	}
}

// goModVersion returns the version go.mod requires of module, without its "v".
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + `\s+v(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("go.mod does not require %s", module)
	}
	return string(m[1])
}

var pinnedRef = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9._-]*)?(@sha256:[a-f0-9]{64})?$`)

// checkPinned fails unless ref names a tag other than latest, or a digest.
func checkPinned(t *testing.T, where, ref string) {
	t.Helper()
	_, tag, hasTag := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	digest := strings.Contains(ref, "@sha256:")
	switch {
	case !pinnedRef.MatchString(ref):
		t.Errorf("%s: image %q is not an image reference", where, ref)
	case !hasTag && !digest:
		t.Errorf("%s: image %q has no tag", where, ref)
	case strings.HasPrefix(tag, "latest"):
		t.Errorf("%s: image %q uses latest", where, ref)
	}
}

func TestDeployImagesArePinned(t *testing.T) {
	server, ui := goModVersion(t, "go.temporal.io/server"), goModVersion(t, "github.com/temporalio/ui-server/v2")
	want := map[string]string{"temporalio/server": server, "temporalio/admin-tools": server, "temporalio/ui": ui}
	seen := map[string]bool{}
	for _, f := range deployYAMLFiles(t) {
		for _, doc := range yamlDocs(t, f) {
			walk(doc, func(m map[string]any) {
				var ref string
				switch img := m["image"].(type) {
				case string: // compose services, Kubernetes containers
					ref = img
				case map[string]any: // Helm values: repository and tag
					repo, _ := img["repository"].(string)
					tag, _ := img["tag"].(string)
					if repo == "" || tag == "" {
						t.Errorf("%s: Helm image %v needs a repository and a tag", f, img)
						return
					}
					ref = repo + ":" + tag
				default:
					return
				}
				checkPinned(t, f, ref)
				repo, tag, _ := strings.Cut(ref, ":")
				if v, ok := want[repo]; ok {
					seen[repo] = true
					if tag != v {
						t.Errorf("%s: %s, want tag %s (the version go.mod pins)", f, ref, v)
					}
				}
			})
		}
	}
	for repo := range want {
		if !seen[repo] {
			t.Errorf("no deployment file uses %s", repo)
		}
	}
}

func TestDockerfileBuildsAStaticNonRootWorker(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var stages []string // names given with AS
	var user, entrypoint string
	cgoOff := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			ref := f[1]
			if ref != "scratch" && !slices.Contains(stages, ref) {
				checkPinned(t, "Dockerfile", ref)
			}
			if len(f) == 4 && strings.EqualFold(f[2], "AS") {
				stages = append(stages, f[3])
			}
		case "USER":
			user = f[1]
		case "ENTRYPOINT":
			entrypoint = strings.Join(f[1:], " ")
		case "ENV":
			cgoOff = cgoOff || strings.Contains(sc.Text(), "CGO_ENABLED=0")
		}
	}
	if !cgoOff {
		t.Error("Dockerfile: the build does not set CGO_ENABLED=0")
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("Dockerfile: final USER %q, want a non-root user", user)
	}
	if !strings.Contains(entrypoint, "silico-worker") {
		t.Errorf("Dockerfile: ENTRYPOINT %s, want the worker", entrypoint)
	}
}

// checkWorker parses args with the worker's own flag set and checks every environment variable name.
func checkWorker(t *testing.T, where string, args []string, env []string) {
	t.Helper()
	fs, _ := newFlagSet(func(string) string { return "" })
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		t.Errorf("%s: worker arguments %q: %v (positional: %q)", where, args, err, fs.Args())
	}
	for _, name := range env {
		// Besides its own, the worker reads the variables the specs name for API keys.
		if !slices.Contains(envVars, name) && !strings.HasSuffix(name, "_API_KEY") {
			t.Errorf("%s: the worker does not read environment variable %s", where, name)
		}
	}
}

func strs(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestDeployWorkerFlagsAndEnvironment(t *testing.T) {
	compose := yamlDocs(t, filepath.Join(deployDir, "docker-compose.yml"))[0].(map[string]any)
	services, _ := compose["services"].(map[string]any)
	workers := 0
	for name, s := range services {
		svc, _ := s.(map[string]any)
		if _, built := svc["build"]; !built || svc["entrypoint"] != nil {
			continue // not the worker image, or another program in it
		}
		workers++
		envMap, _ := svc["environment"].(map[string]any)
		var env []string
		for k := range envMap {
			env = append(env, k)
		}
		checkWorker(t, "docker-compose.yml service "+name, strs(svc["command"]), env)
	}
	if workers != 1 {
		t.Errorf("docker-compose.yml: %d worker services, want 1", workers)
	}

	containers := 0
	for _, doc := range yamlDocs(t, filepath.Join(deployDir, "k8s", "silico-worker.yaml")) {
		walk(doc, func(m map[string]any) {
			img, _ := m["image"].(string)
			if !strings.Contains(img, "silico/worker") {
				return
			}
			containers++
			var env []string
			for _, e := range m["env"].([]any) {
				env = append(env, e.(map[string]any)["name"].(string))
			}
			checkWorker(t, "k8s/silico-worker.yaml", strs(m["args"]), env)
		})
	}
	if containers != 1 {
		t.Errorf("k8s/silico-worker.yaml: %d worker containers, want 1", containers)
	}

	// The check itself must be able to fail.
	fs, _ := newFlagSet(func(string) string { return "" })
	if err := fs.Parse([]string{"--no-such-flag"}); err == nil {
		t.Fatal("the worker's flag set accepts an unknown flag")
	}
}

func TestDeployRegistersSilicosSearchAttributes(t *testing.T) {
	for _, f := range []string{"scripts/bootstrap.sh", "k8s/silico-worker.yaml"} {
		b, err := os.ReadFile(filepath.Join(deployDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for name := range wire.SearchAttributes() {
			if !bytes.Contains(b, []byte(name)) {
				t.Errorf("%s does not register search attribute %s", f, name)
			}
		}
	}
}

// TestGoVersionIsGoMods: the README's requirement and the Dockerfile's build image name the Go version of
// go.mod's go line, so neither promises a toolchain the module does not build with.
func TestGoVersionIsGoMods(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join("../..", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(read("go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	want := m[1]
	for _, c := range []struct{ file, re string }{
		{"README.md", `Requirements: Go ([0-9][0-9.]*[0-9])`},
		{"Dockerfile", `(?m)^FROM golang:(\S+)`},
	} {
		got := "no version"
		if m := regexp.MustCompile(c.re).FindStringSubmatch(read(c.file)); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%s names Go %s, want %s (go.mod's go line)", c.file, got, want)
		}
	}
}
