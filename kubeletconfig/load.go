package kubeletconfig

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// The group, version and kind a configuration file must declare.
const (
	APIVersion = "kubelet.config.k8s.io/v1beta1"
	Kind       = "KubeletConfiguration"
)

// Config is a KubeletConfiguration read from a file: the configuration
// with upstream's defaults applied, and which fields the file set.
type Config struct {
	kubeletv1beta1.KubeletConfiguration
	// Path is the file it came from (Parse's name).
	Path string
	// written is the file as written, without defaults.
	written kubeletv1beta1.KubeletConfiguration
	// set holds the dotted paths of the fields the file writes.
	set map[string]bool
}

// MaxFileSize is the largest configuration Load and Parse accept: a
// kubeadm node's file is about 1 KiB, every field of the type written out
// a few KiB; a larger file is a mistake or an attack on the parser.
const MaxFileSize = 4 << 20

// ErrTooLarge is returned for a configuration over MaxFileSize.
var ErrTooLarge = errors.New("kubelet config: larger than 4 MiB")

// Load reads a KubeletConfiguration file (YAML or JSON) strictly: a field
// the type does not have, a duplicate field or a value of the wrong type
// is an error naming the file, the line and the field; so is another
// apiVersion or kind, or a file over MaxFileSize (ErrTooLarge, found
// without reading more than that). Defaults are upstream's (SetDefaults).
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kubelet config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("kubelet config: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load of data already read; name prefixes its errors.
func Parse(name string, data []byte) (*Config, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s", ErrTooLarge, name)
	}
	fail := func(line int, format string, args ...any) error {
		where := name
		if line > 0 {
			where = fmt.Sprintf("%s:%d", name, line)
		}
		return fmt.Errorf("kubelet config %s: %s", where, fmt.Sprintf(format, args...))
	}
	var doc yaml3.Node
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fail(0, "%v", err)
	}
	var extra yaml3.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fail(extra.Line, "more than one document")
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml3.MappingNode {
		return nil, fail(doc.Line, "not a mapping")
	}
	root := doc.Content[0]
	c := &Config{Path: name, set: map[string]bool{}}
	if err := checkFields(root, reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{}), "", c.set, fail); err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(data, &c.written); err != nil {
		return nil, fail(0, "%v", err)
	}
	if c.written.APIVersion != APIVersion || c.written.Kind != Kind {
		return nil, fail(root.Line, "apiVersion %q kind %q: want apiVersion %s kind %s", c.written.APIVersion, c.written.Kind, APIVersion, Kind)
	}
	c.KubeletConfiguration = *c.written.DeepCopy()
	SetDefaults(&c.KubeletConfiguration)
	return c, nil
}

// checkFields walks a YAML mapping against the Go type it decodes into:
// every key must be a JSON field of t (exactly as spelled), and each
// value must fit the field's kind.
func checkFields(n *yaml3.Node, t reflect.Type, path string, set map[string]bool, fail func(int, string, ...any) error) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()) ||
		reflect.PointerTo(t).Implements(reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()) {
		return nil // its own format (durations, quantities): the decoder checks it
	}
	if n.Kind == yaml3.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml3.ScalarNode && n.Tag == "!!null" {
		return nil // "field:" with no value: left unset
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml3.MappingNode {
			return fail(n.Line, "%s: want a mapping", show(path))
		}
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				return fail(k.Line, "unknown field %q", join(path, k.Value))
			}
			set[join(path, k.Value)] = true
			if err := checkFields(v, f, join(path, k.Value), set, fail); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml3.MappingNode {
			return fail(n.Line, "%s: want a mapping", show(path))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			set[join(path, n.Content[i].Value)] = true
			if err := checkFields(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), set, fail); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml3.SequenceNode {
			return fail(n.Line, "%s: want a list", show(path))
		}
		for i, item := range n.Content {
			if err := checkFields(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), set, fail); err != nil {
				return err
			}
		}
	default:
		if n.Kind != yaml3.ScalarNode {
			return fail(n.Line, "%s: want a %s", show(path), t.Kind())
		}
	}
	return nil
}

// jsonFields are t's fields by JSON name, inline structs flattened.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func show(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}

// Unsupported returns the fields the file sets to a value other than
// upstream's default that are not among supported (dotted JSON paths such
// as "authentication.x509.clientCAFile"; a path also covers every field
// below it), sorted. A host refuses to start when it is not empty: a field
// it does not honour is never silently ignored.
func (c *Config) Unsupported(supported ...string) []string {
	def := kubeletv1beta1.KubeletConfiguration{}
	SetDefaults(&def)
	var got, want map[string]any
	if err := roundTrip(&c.KubeletConfiguration, &got); err != nil {
		return []string{"(unreadable configuration: " + err.Error() + ")"}
	}
	if err := roundTrip(&def, &want); err != nil {
		return []string{"(unreadable defaults: " + err.Error() + ")"}
	}
	delete(got, "apiVersion")
	delete(got, "kind")
	var out []string
	diff("", got, want, func(path string) {
		if !c.setsWithin(path) {
			return // a default that follows another field (nodeStatusReportFrequency)
		}
		for _, s := range supported {
			if path == s || strings.HasPrefix(path, s+".") {
				return
			}
		}
		out = append(out, path)
	})
	return out
}

// setsWithin reports whether the file sets path or a field above it.
func (c *Config) setsWithin(path string) bool {
	for p := path; ; {
		if c.Sets(p) {
			return true
		}
		i := strings.LastIndex(p, ".")
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// Sets reports whether the file writes the field at path (a dotted JSON
// path such as "authentication.x509.clientCAFile"), whatever its value.
func (c *Config) Sets(path string) bool { return c.set[path] }

func roundTrip(in any, out *map[string]any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// diff calls report for each leaf path where got differs from want, in
// sorted order of keys.
func diff(path string, got, want any, report func(string)) {
	gm, gok := got.(map[string]any)
	wm, wok := want.(map[string]any)
	if !gok || !wok {
		if !reflect.DeepEqual(got, want) {
			report(path)
		}
		return
	}
	keys := map[string]bool{}
	for k := range gm {
		keys[k] = true
	}
	for k := range wm {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		diff(join(path, k), gm[k], wm[k], report)
	}
}

// ErrUnsupported wraps the refusal of fields a host does not support.
var ErrUnsupported = errors.New("unsupported KubeletConfiguration fields")

// CheckSupported is Unsupported as an error (wrapping ErrUnsupported)
// that names the file and each field; nil when every field set is
// supported.
func (c *Config) CheckSupported(supported ...string) error {
	bad := c.Unsupported(supported...)
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w in %s (set to a value other than the default, and not supported by this agent): %s",
		ErrUnsupported, c.Path, strings.Join(bad, ", "))
}
