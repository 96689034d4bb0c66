package eviction

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseThresholdsDefaults(t *testing.T) {
	ts, err := ParseThresholds(ThresholdSpec{})
	require.NoError(t, err)
	var got []string
	for _, th := range ts {
		got = append(got, th.String())
	}
	require.Equal(t, []string{
		"memory.available<100Mi",
		"nodefs.available<10%",
		"nodefs.inodesFree<5%",
		"imagefs.available<15%",
		"imagefs.inodesFree<5%",
		"allocatableMemory.available<100Mi",
	}, got)
}

func TestParseThresholds(t *testing.T) {
	tests := []struct {
		name    string
		spec    ThresholdSpec
		want    []string
		wantErr string
	}{
		{
			name: "empty hard disables defaults",
			spec: ThresholdSpec{Hard: map[string]string{}},
		},
		{
			name: "hard soft grace and reclaim",
			spec: ThresholdSpec{
				Hard:                   map[string]string{"memory.available": "150Mi"},
				Soft:                   map[string]string{"memory.available": "300Mi", "nodefs.available": "20%"},
				SoftGracePeriod:        map[string]string{"memory.available": "30s", "nodefs.available": "1m30s"},
				MinimumReclaim:         map[string]string{"memory.available": "0Mi", "nodefs.available": "500Mi"},
				NoAllocatableThreshold: true,
			},
			want: []string{
				"memory.available<150Mi (min-reclaim 0)",
				"memory.available<300Mi (grace 30s) (min-reclaim 0)",
				"nodefs.available<20% (grace 1m30s) (min-reclaim 500Mi)",
			},
		},
		{
			name: "merge defaults",
			spec: ThresholdSpec{Hard: map[string]string{"memory.available": "1Gi", "imagefs.available": "0%"}, MergeDefaults: true, NoAllocatableThreshold: true},
			want: []string{"memory.available<1Gi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.inodesFree<5%"},
		},
		{
			name: "0% and 100% disable",
			spec: ThresholdSpec{Hard: map[string]string{"memory.available": "100%", "nodefs.available": "0%"}},
		},
		{
			name: "allocatable copies min reclaim",
			spec: ThresholdSpec{Hard: map[string]string{"memory.available": "100Mi"}, MinimumReclaim: map[string]string{"memory.available": "50Mi"}},
			want: []string{"memory.available<100Mi (min-reclaim 50Mi)", "allocatableMemory.available<100Mi (min-reclaim 50Mi)"},
		},
		{
			name: "explicit allocatable is not duplicated",
			spec: ThresholdSpec{Hard: map[string]string{"memory.available": "100Mi", "allocatableMemory.available": "200Mi"}},
			want: []string{"memory.available<100Mi", "allocatableMemory.available<200Mi"},
		},
		{name: "unknown signal", spec: ThresholdSpec{Hard: map[string]string{"cpu.available": "1"}}, wantErr: `unknown signal "cpu.available"`},
		{name: "unknown signal in grace", spec: ThresholdSpec{Hard: map[string]string{}, SoftGracePeriod: map[string]string{"mem": "1s"}}, wantErr: `unknown signal "mem"`},
		{name: "percentage above 100", spec: ThresholdSpec{Hard: map[string]string{"nodefs.available": "101%"}}, wantErr: "out of range"},
		{name: "negative percentage", spec: ThresholdSpec{Hard: map[string]string{"nodefs.available": "-1%"}}, wantErr: "out of range"},
		{name: "not a percentage", spec: ThresholdSpec{Hard: map[string]string{"nodefs.available": "x%"}}, wantErr: "not a percentage"},
		{name: "NaN percentage", spec: ThresholdSpec{Hard: map[string]string{"nodefs.available": "NaN%"}}, wantErr: "not a percentage"},
		{name: "bad quantity", spec: ThresholdSpec{Hard: map[string]string{"memory.available": "lots"}}, wantErr: `memory.available hard threshold: "lots"`},
		{name: "zero quantity", spec: ThresholdSpec{Hard: map[string]string{"memory.available": "0"}}, wantErr: "must be positive"},
		{name: "negative quantity", spec: ThresholdSpec{Hard: map[string]string{"memory.available": "-1Mi"}}, wantErr: "must be positive"},
		{name: "soft without grace", spec: ThresholdSpec{Hard: map[string]string{}, Soft: map[string]string{"memory.available": "1Gi"}}, wantErr: "soft threshold memory.available has no grace period"},
		{name: "zero grace", spec: ThresholdSpec{Hard: map[string]string{}, Soft: map[string]string{"memory.available": "1Gi"}, SoftGracePeriod: map[string]string{"memory.available": "0s"}}, wantErr: "must be positive"},
		{name: "bad grace", spec: ThresholdSpec{Hard: map[string]string{}, SoftGracePeriod: map[string]string{"memory.available": "soon"}}, wantErr: `grace period "soon"`},
		{name: "zero percent min reclaim", spec: ThresholdSpec{MinimumReclaim: map[string]string{"nodefs.available": "0%"}}, wantErr: "percentage must be positive"},
		{name: "negative min reclaim", spec: ThresholdSpec{MinimumReclaim: map[string]string{"nodefs.available": "-1Gi"}}, wantErr: "must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := ParseThresholds(tc.spec)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidThreshold)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, th := range ts {
				got = append(got, th.String())
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseThresholdFlags(t *testing.T) {
	tests := []struct {
		name                    string
		hard, soft, grace, recl string
		want                    []Threshold
		wantLen                 int
		wantErr                 string
	}{
		{name: "empty hard means defaults", wantLen: 6},
		{
			name: "full syntax", hard: "memory.available<100Mi, nodefs.available<10%", soft: "memory.available<1Gi",
			grace: "memory.available=1m", recl: "memory.available=10Mi", wantLen: 4,
		},
		{name: "greater than", hard: "memory.available>100Mi", wantErr: `unsupported operator ">"`},
		{name: "less or equal", hard: "memory.available<=100Mi", wantErr: `unsupported operator "<="`},
		{name: "equals", hard: "memory.available=100Mi", wantErr: `unsupported operator "="`},
		{name: "missing operator", hard: "memory.available100Mi", wantErr: "expected signal<value"},
		{name: "missing signal", hard: "<100Mi", wantErr: "expected signal<value"},
		{name: "duplicate", hard: "memory.available<100Mi,memory.available<200Mi", wantErr: `duplicate signal "memory.available"`},
		{name: "bad grace syntax", hard: "memory.available<1Mi", grace: "memory.available:1m", wantErr: "expected signal=value"},
		{name: "soft without grace", hard: "memory.available<1Mi", soft: "nodefs.available<20%", wantErr: "no grace period"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := ParseThresholdFlags(tc.hard, tc.soft, tc.grace, tc.recl)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidThreshold)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, ts, tc.wantLen)
		})
	}
	ts, err := ParseThresholdFlags("memory.available<100Mi", "memory.available<1Gi", "memory.available=1m30s", "")
	require.NoError(t, err)
	require.Equal(t, 90*time.Second, ts[1].GracePeriod)
	require.False(t, ts[1].IsHard())
	require.True(t, ts[0].IsHard())
}

func TestValidateThresholds(t *testing.T) {
	q := qty("1Mi")
	tests := []struct {
		name    string
		ts      []Threshold
		wantErr string
	}{
		{name: "ok", ts: []Threshold{{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: q}}, {Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: q}, GracePeriod: time.Second}}},
		{name: "duplicate hard", ts: []Threshold{{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: q}}, {Signal: SignalMemoryAvailable, Value: ThresholdValue{Percentage: 0.1}}}, wantErr: "duplicate hard threshold for memory.available"},
		{name: "unknown", ts: []Threshold{{Signal: "x", Value: ThresholdValue{Quantity: q}}}, wantErr: `unknown signal "x"`},
		{name: "empty value", ts: []Threshold{{Signal: SignalPIDAvailable}}, wantErr: "out of range"},
		{name: "both", ts: []Threshold{{Signal: SignalPIDAvailable, Value: ThresholdValue{Quantity: q, Percentage: 0.1}}}, wantErr: "both"},
		{name: "negative grace", ts: []Threshold{{Signal: SignalPIDAvailable, Value: ThresholdValue{Quantity: q}, GracePeriod: -1}}, wantErr: "negative grace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateThresholds(tc.ts)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidThreshold)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// FuzzParseThresholdFlags checks that no input panics and that every
// accepted input yields thresholds that pass validation.
func FuzzParseThresholdFlags(f *testing.F) {
	f.Add("memory.available<100Mi,nodefs.available<10%", "memory.available<1Gi", "memory.available=1m30s", "memory.available=0Mi")
	f.Add("nodefs.inodesFree<5%", "", "", "nodefs.inodesFree=1%")
	f.Add("pid.available<1e3", "pid.available<10%", "pid.available=10s", "")
	f.Add("memory.available<<", ">", "=", ",,")
	f.Add("imagefs.available<1e400", "", "", "")
	f.Fuzz(func(t *testing.T, hard, soft, grace, reclaim string) {
		ts, err := ParseThresholdFlags(hard, soft, grace, reclaim)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidThreshold)
			return
		}
		require.NoError(t, validateThresholds(ts))
		for _, th := range ts {
			_ = th.String()
			_ = th.Value.amount(1 << 40)
		}
	})
}

func TestHardReservation(t *testing.T) {
	th, err := ParseThresholdFlags("memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,pid.available<5%", "memory.available<1Gi", "memory.available=1m", "")
	if err != nil {
		t.Fatal(err)
	}
	got := HardReservation(th, v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourceEphemeralStorage: resource.MustParse("100Gi")})
	// 10% as a float32 fraction of the capacity, as upstream computes it.
	tenth := int64(float64(100<<30) * float64(float32(0.1)))
	want := v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi"), v1.ResourceEphemeralStorage: *resource.NewQuantity(tenth, resource.BinarySI)}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v (soft and other signals reserve nothing)", got, want)
	}
	for k, q := range want {
		if g := got[k]; g.Cmp(q) != 0 {
			t.Errorf("%s: got %s, want %s", k, g.String(), q.String())
		}
	}
}
