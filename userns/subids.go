package userns

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

const (
	// KubeletUser is the user whose subordinate IDs the kubelet gives
	// pods.
	KubeletUser = "kubelet"
	// DefaultSubUIDFile and DefaultSubGIDFile are shadow-utils' files of
	// subordinate user and group IDs.
	DefaultSubUIDFile = "/etc/subuid"
	// DefaultSubGIDFile: see DefaultSubUIDFile.
	DefaultSubGIDFile = "/etc/subgid"
)

// SubIDs says where KubeletMappings finds the node's subordinate ID
// ranges. The zero value reads the kubelet's: the "kubelet" user's entry
// in /etc/subuid and /etc/subgid.
type SubIDs struct {
	// User owns the range; "": KubeletUser.
	User string
	// SubUIDFile and SubGIDFile are the files of "owner:first:count"
	// lines; "": DefaultSubUIDFile, DefaultSubGIDFile.
	SubUIDFile string
	// SubGIDFile: see SubUIDFile.
	SubGIDFile string
	// LookupUser finds User; it returns a user.UnknownUserError when there
	// is none. nil: user.Lookup.
	LookupUser func(name string) (*user.User, error)
	// LookupGroup finds the group named User, whose GID may own the
	// subgid entry; it returns a user.UnknownGroupError when there is
	// none. nil: user.LookupGroup.
	LookupGroup func(name string) (*user.Group, error)
}

func (s SubIDs) withDefaults() SubIDs {
	if s.User == "" {
		s.User = KubeletUser
	}
	if s.SubUIDFile == "" {
		s.SubUIDFile = DefaultSubUIDFile
	}
	if s.SubGIDFile == "" {
		s.SubGIDFile = DefaultSubGIDFile
	}
	if s.LookupUser == nil {
		s.LookupUser = user.Lookup
	}
	if s.LookupGroup == nil {
		s.LookupGroup = user.LookupGroup
	}
	return s
}

// DefaultRange is the range the kubelet uses when no "kubelet" user
// exists: every ID from idsPerPod (0: DefaultIDsPerPod) to the last
// 32-bit ID.
func DefaultRange(idsPerPod uint32) IDRange {
	if idsPerPod == 0 {
		idsPerPod = DefaultIDsPerPod
	}
	return IDRange{First: idsPerPod, Length: uint32(idSpace - uint64(idsPerPod))}
}

// KubeletMappings returns the host IDs the kubelet would cut pods' ranges
// from (its GetKubeletMappings): DefaultRange(idsPerPod) when src.User
// does not exist, else that user's single subordinate range, which must be
// the same in the subuid and the subgid file. The range is not validated
// here; New does that.
//
// An entry is the user's when its owner is the user's name or numeric UID
// (subuid) or the name or the GID of the group of the same name (subgid),
// as shadow-utils matches them. A user without exactly one entry in each
// file is an error: the kubelet refuses to start rather than fall back.
func KubeletMappings(ctx context.Context, idsPerPod uint32, src SubIDs) (IDRange, error) {
	return kubeletMappings(klog.FromContext(ctx), idsPerPod, src)
}

func kubeletMappings(logger klog.Logger, idsPerPod uint32, src SubIDs) (IDRange, error) {
	src = src.withDefaults()
	def := DefaultRange(idsPerPod)

	u, err := src.LookupUser(src.User)
	if err != nil {
		if errors.As(err, new(user.UnknownUserError)) {
			logger.V(5).Info("User namespaces: user not found, using default mappings", "user", src.User)
			return def, nil
		}
		return IDRange{}, fmt.Errorf("look up user %q: %w", src.User, err)
	}
	gid := ""
	g, err := src.LookupGroup(src.User)
	switch {
	case err == nil:
		gid = g.Gid
	case !errors.As(err, new(user.UnknownGroupError)):
		return IDRange{}, fmt.Errorf("look up group %q: %w", src.User, err)
	}

	uids, err := ownerRange(src.SubUIDFile, src.User, u.Uid)
	if err != nil {
		return IDRange{}, fmt.Errorf("error retrieving additional uids for user %q: %w", src.User, err)
	}
	gids, err := ownerRange(src.SubGIDFile, src.User, gid)
	if err != nil {
		return IDRange{}, fmt.Errorf("error retrieving additional gids for user %q: %w", src.User, err)
	}
	if uids != gids {
		return IDRange{}, fmt.Errorf("mismatched subuids and subgids for user %q", src.User)
	}
	logger.V(5).Info("User namespaces: user found, using its subordinate IDs", "user", src.User,
		"first", uids.First, "length", uids.Length)
	return uids, nil
}

// ownerRange reads the single range owned by name (or by id, if not
// empty) in a subuid/subgid file.
func ownerRange(path, name, id string) (IDRange, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return IDRange{}, err
	}
	var found []IDRange
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		owner, rest, _ := strings.Cut(line, ":")
		if owner != name && (id == "" || owner != id) {
			continue
		}
		r, err := parseSubIDLine(line, rest)
		if err != nil {
			return IDRange{}, fmt.Errorf("%s: %w", path, err)
		}
		found = append(found, r)
	}
	if err := sc.Err(); err != nil {
		return IDRange{}, fmt.Errorf("%s: %w", path, err)
	}
	switch len(found) {
	case 0:
		return IDRange{}, fmt.Errorf("%s: no range for %q", path, name)
	case 1:
		return found[0], nil
	default:
		return IDRange{}, fmt.Errorf("%s: %d ranges for %q: it must have only one", path, len(found), name)
	}
}

// parseSubIDLine parses the "first:count" part of an owner's line; each
// must fit 32 bits.
func parseSubIDLine(line, rest string) (IDRange, error) {
	parts := strings.Split(rest, ":")
	if len(parts) != 2 {
		return IDRange{}, fmt.Errorf("invalid line %q", line)
	}
	first, err := strconv.ParseUint(parts[0], 10, 32)
	if err != nil {
		return IDRange{}, fmt.Errorf("error parsing line %q: %w", line, err)
	}
	count, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return IDRange{}, fmt.Errorf("error parsing line %q: %w", line, err)
	}
	return IDRange{First: uint32(first), Length: uint32(count)}, nil
}
