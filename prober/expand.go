package prober

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// expandCommand replaces $(NAME) references in an exec probe's command by
// the container's static environment values (those without valueFrom), as
// upstream's ExpandContainerCommandOnlyStatic does: "$$" is an escaped "$",
// and references to unknown names are kept verbatim.
func expandCommand(cmd []string, env []v1.EnvVar) []string {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		if e.ValueFrom == nil {
			vars[e.Name] = e.Value
		}
	}
	out := make([]string, len(cmd))
	for i, s := range cmd {
		out[i] = expand(s, vars)
	}
	return out
}

func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i += 2
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i += 2
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += end + 3
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i += 2
		}
	}
	return b.String()
}
