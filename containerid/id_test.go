package containerid

import (
	"errors"
	"testing"
)

func TestParseAndString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ID
		err  bool
	}{
		{in: "containerd://abc", want: ID{Type: "containerd", ID: "abc"}},
		{in: "abc", want: ID{ID: "abc"}},
		{in: "", err: true},
		{in: "containerd://", err: true},
	} {
		got, err := Parse(tc.in)
		if tc.err {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Parse(%q) error = %v, want ErrInvalid", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("String() = %q, want %q", got.String(), tc.in)
		}
	}
	if (ID{}).String() != "" || !(ID{}).IsEmpty() {
		t.Error("zero ID must print empty and be empty")
	}
}

func TestSame(t *testing.T) {
	full := ID{Type: "containerd", ID: "a"}
	if !full.Same(ID{ID: "a"}) || !(ID{ID: "a"}).Same(full) {
		t.Error("an untyped ID matches a typed one with the same runtime ID")
	}
	if full.Same(ID{Type: "cri-o", ID: "a"}) || full.Same(ID{Type: "containerd", ID: "b"}) {
		t.Error("different types or IDs must not match")
	}
}
